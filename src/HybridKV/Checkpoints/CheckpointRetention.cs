using System.Text.Json;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using Microsoft.Extensions.Logging;

namespace HybridKV.Checkpoints;

/// <summary>
/// Keeps the newest checkpoints (and the index checkpoints they refer to), deletes the rest and any interrupted
/// checkpoint, and lets the log device drop segments that no kept checkpoint and no live record needs.
/// </summary>
internal sealed class CheckpointRetention(
    CheckpointCatalog catalog, StorageDevice device, int checkpointsToKeep, Guid logId, JsonSerializerOptions json,
    ILogger logger)
{
    /// <summary>Applies the rule after a commit; runs inside the one-at-a-time gate, so no checkpoint is being
    /// written and leftovers of interrupted ones go too.</summary>
    public async Task ApplyAsync(long beginAddress)
    {
        if (checkpointsToKeep <= 0)
        {
            return;
        }

        IReadOnlyList<Guid> deleted = await catalog.ApplyRetentionAsync(checkpointsToKeep, deleteUncommitted: true,
            manifest => ReadReferences(manifest)?.Index is { } index ? [index.Token] : [], BelongsToThisLog,
            CancellationToken.None).ConfigureAwait(false);
        foreach (Guid token in deleted)
        {
            CheckpointLog.Deleted(logger, token);
        }

        await TruncateLogAsync(beginAddress, CancellationToken.None).ConfigureAwait(false);
    }

    /// <summary>
    /// Deletes the log device's whole segments below <paramref name="beginAddress"/> that no committed checkpoint
    /// needs either.
    /// </summary>
    public async Task TruncateLogAsync(long beginAddress, CancellationToken cancellationToken)
    {
        long neededFrom = Math.Min(beginAddress, await OldestNeededAddressAsync(cancellationToken).ConfigureAwait(false));
        long segmentStart = neededFrom & ~(device.SegmentSize - 1);
        if (segmentStart > device.BeginAddress)
        {
            await device.TruncateUntilAsync(segmentStart, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The lowest begin address of the checkpoints recovery may choose (<see cref="long.MaxValue"/> with none): the log
    /// device must keep everything from there. Those are the newest <c>checkpointsToKeep</c>; an older full checkpoint
    /// kept only for its index needs no log, because recovery of a log-only checkpoint replays from that checkpoint's own
    /// begin address at the lowest.
    /// </summary>
    private async Task<long> OldestNeededAddressAsync(CancellationToken cancellationToken)
    {
        long oldest = long.MaxValue;
        IEnumerable<CheckpointManifest> candidates = (await catalog.ListAsync(cancellationToken).ConfigureAwait(false))
            .Where(BelongsToThisLog);
        if (checkpointsToKeep > 0)
        {
            candidates = candidates.Take(checkpointsToKeep);
        }

        foreach (CheckpointManifest manifest in candidates)
        {
            // A checkpoint whose metadata cannot be read is never recovered, so it needs nothing.
            oldest = Math.Min(oldest, ReadReferences(manifest)?.BeginAddress ?? long.MaxValue);
        }

        return oldest;
    }

    /// <summary>Checkpoints of another log (recovery skipped them) are neither deleted nor allowed to hold this log's
    /// segments back.</summary>
    private bool BelongsToThisLog(CheckpointManifest manifest) => ReadReferences(manifest)?.Identity?.LogId is not { } id || id == logId;

    private CheckpointReferences? ReadReferences(CheckpointManifest manifest)
    {
        try
        {
            return manifest.Metadata.Deserialize<CheckpointReferences>(json);
        }
        catch (JsonException)
        {
            return null;
        }
    }

    /// <summary>What retention needs of a checkpoint's metadata, read without its session table.</summary>
    private sealed record CheckpointReferences(long BeginAddress, IndexCheckpointMetadata? Index, StoreIdentity? Identity);
}
