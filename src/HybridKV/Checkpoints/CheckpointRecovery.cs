using System.Diagnostics;
using System.Text.Json;
using HybridKV.Devices;
using HybridKV.Diagnostics;
using HybridKV.Index;
using HybridKV.Log;
using HybridKV.Operations;
using HybridKV.Sessions;
using Microsoft.Extensions.Logging;

namespace HybridKV.Checkpoints;

/// <summary>
/// Recovery (CPR §6.4): picks the newest checkpoint that verifies completely, loads its index checkpoint, replays the
/// log between the index checkpoint's start and the commit's final address (Algorithm 3), undoing records of the next
/// version on the device, and restores the log's offsets and every session's commit point.
/// </summary>
internal sealed class CheckpointRecovery<TKey, TValue, TInput, TOutput, TContext, TFunctions>
    where TKey : unmanaged
    where TValue : unmanaged
    where TFunctions : struct, IFunctions<TKey, TValue, TInput, TOutput, TContext>
{
    private readonly StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> _engine;
    private readonly CheckpointCatalog _catalog;
    private readonly StorageDevice _device;
    private readonly StoreIdentity _identity;
    private readonly ILogger _logger;

    // A progress line per this many bytes of log replayed.
    private const long ProgressLogBytes = 256L << 20;

    public CheckpointRecovery(
        StoreEngine<TKey, TValue, TInput, TOutput, TContext, TFunctions> engine,
        CheckpointCatalog catalog,
        StorageDevice device,
        StoreIdentity identity,
        ILogger logger)
    {
        _engine = engine;
        _catalog = catalog;
        _device = device;
        _identity = identity;
        _logger = logger;
    }

    /// <summary>A checkpoint that verified, with its metadata and the manifest holding its index part.</summary>
    /// <param name="Manifest">The chosen checkpoint.</param>
    /// <param name="Metadata">Its store metadata.</param>
    /// <param name="IndexManifest">The checkpoint holding the index part it starts from, if any.</param>
    /// <param name="Skipped">Checkpoints passed over, each with the file at fault.</param>
    /// <param name="Abandoned">Committed checkpoints newer than the choice (or whose age is unknown): recovering an
    /// older checkpoint abandons the history after it, whose log the recovered store overwrites.</param>
    public sealed record Choice(CheckpointManifest Manifest, CheckpointMetadata Metadata, CheckpointManifest? IndexManifest,
        IReadOnlyList<string> Skipped, IReadOnlyList<Guid> Abandoned);

    /// <summary>
    /// Finds the checkpoint to recover: <paramref name="token"/>, or the newest whose manifest, metadata and parts
    /// (and those of the index checkpoint it refers to) all verify.
    /// </summary>
    /// <returns>The choice, or null when the store holds no checkpoint at all.</returns>
    /// <exception cref="CorruptCheckpointException">Checkpoints exist but none verifies.</exception>
    public async Task<Choice?> ChooseAsync(Guid? token, CancellationToken cancellationToken)
    {
        var skipped = new List<string>();
        var manifests = new List<CheckpointManifest>();
        var unreadable = new List<Guid>();
        foreach (Guid committed in await _catalog.Store.ListCommittedAsync(cancellationToken).ConfigureAwait(false))
        {
            (CheckpointManifest? manifest, string? problem) =
                await _catalog.TryReadManifestAsync(committed, cancellationToken).ConfigureAwait(false);
            if (manifest is not null)
            {
                manifests.Add(manifest);
            }
            else
            {
                unreadable.Add(committed);
                if (token is null || token == committed)
                {
                    skipped.Add(problem!);
                }
            }
        }

        List<(CheckpointManifest Manifest, Guid LogId)> foreign = TakeForeign(manifests);
        foreach ((CheckpointManifest other, Guid logId) in foreign)
        {
            string problem = $"{_catalog.Store.Describe(other.Token, null)}: belongs to log {logId}, not to this " +
                             $"store's log {_identity.LogId}";
            skipped.Add(problem);
            CheckpointLog.Skipped(_logger, problem);
        }

        if (foreign.Count > 0 && (manifests.Count == 0 || (token is { } mine && manifests.All(m => m.Token != mine))) &&
            unreadable.Count == 0)
        {
            throw new InvalidOperationException(
                $"No checkpoint in {_catalog.Store} belongs to this store's log {_identity.LogId} on {_device}: " +
                $"{foreign.Count} checkpoint(s) there were written for log(s) " +
                $"{string.Join(", ", foreign.Select(f => f.LogId).Distinct())} (a checkpoint directory shared by two " +
                "stores, or a log directory that was moved, replaced or deleted). Recovering one would read every key " +
                "as absent. Give the store its own log and checkpoints, or delete the store (StoreSettings.ExistingData " +
                "= Delete) to start empty; nothing was changed.");
        }

        if (token is { } wanted && manifests.All(m => m.Token != wanted) && skipped.Count == 0)
        {
            throw new ArgumentException($"No committed checkpoint {wanted} in {_catalog.Store.Describe(wanted, null)}.",
                nameof(token));
        }

        foreach (CheckpointManifest manifest in manifests.OrderByDescending(m => m.Sequence))
        {
            if (token is { } only && manifest.Token != only)
            {
                continue;
            }

            (Choice? choice, string? problem) = await VerifyAsync(manifest, manifests, cancellationToken)
                .ConfigureAwait(false);
            if (choice is not null)
            {
                Guid[] abandoned = manifests.Where(m => m.Sequence > manifest.Sequence).Select(m => m.Token)
                    .Concat(unreadable).ToArray();
                return choice with { Skipped = skipped, Abandoned = abandoned };
            }

            skipped.Add(problem!);
            CheckpointLog.Skipped(_logger, problem!);
        }

        if (skipped.Count > 0)
        {
            throw new CorruptCheckpointException(skipped);
        }

        return null;
    }

    /// <summary>
    /// Removes from <paramref name="manifests"/> the checkpoints of other logs (and of older formats, which never
    /// belong to a labelled log) and returns them; a checkpoint of a newer format stops recovery.
    /// </summary>
    private List<(CheckpointManifest Manifest, Guid LogId)> TakeForeign(List<CheckpointManifest> manifests)
    {
        var foreign = new List<(CheckpointManifest, Guid)>();
        foreach (CheckpointManifest manifest in manifests.ToArray())
        {
            CheckpointOwner? owner;
            try
            {
                owner = manifest.Metadata.Deserialize<CheckpointOwner>(CheckpointMetadata.JsonOptions);
            }
            catch (JsonException)
            {
                // Left among this log's checkpoints: verification reports it as damaged.
                continue;
            }

            if (owner is null)
            {
                continue;
            }

            if (owner.Format > CheckpointMetadata.CurrentFormat)
            {
                throw new InvalidOperationException(
                    $"Checkpoint {_catalog.Store.Describe(manifest.Token, null)} was written in format {owner.Format} " +
                    $"by a newer version of HybridKV; this version reads format {CheckpointMetadata.CurrentFormat}. " +
                    "Recover with the newer version; nothing was changed.");
            }

            Guid logId = owner.Identity?.LogId ?? Guid.Empty;
            if (owner.Format < CheckpointMetadata.CurrentFormat || logId != _identity.LogId)
            {
                manifests.Remove(manifest);
                foreign.Add((manifest, logId));
            }
        }

        return foreign;
    }

    /// <summary>What says which log a checkpoint belongs to, read without the rest of its metadata.</summary>
    private sealed record CheckpointOwner(int Format, StoreIdentity? Identity);

    private async Task<(Choice?, string?)> VerifyAsync(
        CheckpointManifest manifest, List<CheckpointManifest> all, CancellationToken cancellationToken)
    {
        string where = _catalog.Store.Describe(manifest.Token, "manifest.json");
        CheckpointMetadata? metadata;
        try
        {
            metadata = manifest.Metadata.Deserialize<CheckpointMetadata>(
                CheckpointMetadata.JsonOptions);
        }
        catch (JsonException error)
        {
            return (null, $"{where}: the store metadata cannot be read ({error.Message})");
        }

        if (metadata is null || metadata.Format != CheckpointMetadata.CurrentFormat)
        {
            return (null, $"{where}: not store metadata of format {CheckpointMetadata.CurrentFormat}");
        }

        IReadOnlyList<string> differences = _identity.DifferencesFrom(metadata.Identity, "this store",
            $"checkpoint {manifest.Token}");
        if (differences.Count > 0)
        {
            throw new InvalidOperationException(
                $"Checkpoint {_catalog.Store.Describe(manifest.Token, null)} was written by a store that differs from " +
                $"this one, so its bytes would be misread: {string.Join("; ", differences)}. Recover it with the " +
                "settings and types it was written with; nothing was changed.");
        }

        if (await _catalog.VerifyPartsAsync(manifest, cancellationToken).ConfigureAwait(false) is { } partProblem)
        {
            return (null, partProblem);
        }

        CheckpointManifest? indexManifest = null;
        if (metadata.Index is { } index)
        {
            indexManifest = all.FirstOrDefault(m => m.Token == index.Token);
            if (indexManifest is null || indexManifest.Parts.All(p => p.Name != CheckpointMetadata.IndexPart))
            {
                return (null, $"{where}: refers to the index checkpoint {index.Token}, which is missing or unreadable " +
                              $"({_catalog.Store.Describe(index.Token, CheckpointMetadata.IndexPart)})");
            }

            if (indexManifest != manifest &&
                await _catalog.VerifyPartsAsync(indexManifest, cancellationToken).ConfigureAwait(false) is { } indexProblem)
            {
                return (null, indexProblem);
            }
        }

        return (new Choice(manifest, metadata, indexManifest, Array.Empty<string>(), Array.Empty<Guid>()), null);
    }

    /// <summary>Rebuilds the index and the log of a fresh store from <paramref name="choice"/>.</summary>
    /// <returns>The number of records replayed.</returns>
    public async Task<long> ApplyAsync(Choice choice, IProgress<RecoveryProgress>? progress, CancellationToken cancellationToken)
    {
        CheckpointMetadata metadata = choice.Metadata;
        var step = Stopwatch.StartNew();
        foreach (Guid abandoned in choice.Abandoned)
        {
            // Before the replay writes to the log: these describe a log this recovery is about to overwrite, so a
            // later recovery must never fall back to them.
            await _catalog.DeleteAsync(abandoned, cancellationToken).ConfigureAwait(false);
            CheckpointLog.Abandoned(_logger, abandoned, choice.Manifest.Token);
        }

        long replayFrom = metadata.BeginAddress;
        if (metadata.Index is { } index)
        {
            Stream stream = await _catalog.OpenPartAsync(choice.IndexManifest!, CheckpointMetadata.IndexPart,
                cancellationToken).ConfigureAwait(false);
            await using (stream.ConfigureAwait(false))
            {
                HashIndex loaded = await HashIndex.ReadCheckpointAsync(stream, cancellationToken).ConfigureAwait(false);
                if (metadata.IndexBuckets is { } buckets && buckets > loaded.BucketCount)
                {
                    // The index grew between this index copy and the commit (a log-only checkpoint after a resize):
                    // records in the replay range were linked into the larger table, whose split chains cannot be
                    // replayed into a smaller one. Grown offline, each entry goes to both halves (always correct).
                    loaded.GrowOffline(buckets);
                }

                _engine.ReplaceIndex(loaded);
            }

            replayFrom = Math.Max(metadata.BeginAddress, Math.Min(index.StartAddress, metadata.StartAddress));
            CheckpointLog.RecoveryStep(_logger, choice.Manifest.Token, metadata.Version, "loading the index",
                step.Elapsed.TotalMilliseconds);
        }

        step.Restart();
        (long records, byte[] tailPagePrefix) = await ReplayAsync(choice, replayFrom, progress, cancellationToken)
            .ConfigureAwait(false);
        await _device.FlushAsync(cancellationToken).ConfigureAwait(false);
        CheckpointLog.RecoveryStep(_logger, choice.Manifest.Token, metadata.Version, "replaying the log",
            step.Elapsed.TotalMilliseconds);

        _engine.Log.RestoreForRecovery(metadata.BeginAddress, metadata.FinalAddress, tailPagePrefix);
        _engine.State = new SystemState(CprPhase.Rest, metadata.Version + 1);
        return records;
    }

    /// <summary>
    /// Algorithm 3 over [<paramref name="replayFrom"/>, final address), page by page. Pages come from the device, or
    /// from the snapshot part at and above its start; a page that came from the snapshot, or in which a record of the
    /// next version was marked invalid, is written back to the device, so that the device alone holds the recovered
    /// log (recovering twice, after a crash during recovery, does the same again).
    /// </summary>
    private async Task<(long Records, byte[] TailPagePrefix)> ReplayAsync(
        Choice choice, long replayFrom, IProgress<RecoveryProgress>? progress, CancellationToken cancellationToken)
    {
        CheckpointMetadata metadata = choice.Metadata;
        int pageSize = _engine.Log.PageSize;
        long pageMask = pageSize - 1;
        long sectorMask = _device.SectorSize - 1;
        long final = metadata.FinalAddress;
        bool snapshot = metadata.Mode == CheckpointMode.Snapshot;
        long snapshotStart = snapshot ? metadata.SnapshotStartAddress : final;
        long firstPage = Math.Min(replayFrom, snapshotStart) & ~pageMask;
        long totalBytes = Math.Max(0, final - firstPage);

        Stream? snapshotStream = snapshot
            ? await _catalog.OpenPartAsync(choice.Manifest, CheckpointMetadata.SnapshotPart, cancellationToken)
                .ConfigureAwait(false)
            : null;
        using var buffer = new AlignedBuffer(pageSize, _device.SectorSize);
        byte[] tailPagePrefix = new byte[(int)(final & pageMask)];
        long records = 0;
        long nextProgressLog = ProgressLogBytes;
        try
        {
            for (long page = firstPage; page < final; page += pageSize)
            {
                int length = (int)Math.Min(pageSize, final - page);
                int ioLength = (int)Math.Min(pageSize, (length + sectorMask) & ~sectorMask);
                bool fromSnapshot = page >= snapshotStart;
                if (!fromSnapshot && page + pageSize <= (replayFrom & ~pageMask))
                {
                    continue;
                }

                Memory<byte> bytes = buffer.Memory[..ioLength];
                if (fromSnapshot)
                {
                    await snapshotStream!.ReadExactlyAsync(bytes[..length], cancellationToken).ConfigureAwait(false);
                    bytes.Span[length..].Clear();
                }
                else
                {
                    await _device.ReadAsync(page, bytes, cancellationToken).ConfigureAwait(false);
                }

                // A page from the device was written by flushes, which wrote every record's checksum; one from the
                // snapshot part was checked as a whole against the manifest, and gets its checksums before it goes
                // to the device.
                (long replayed, bool changed) = ReplayPage(buffer, page, Math.Max(replayFrom, page), page + length,
                    metadata, verify: !fromSnapshot);
                records += replayed;
                if (changed || fromSnapshot)
                {
                    WriteChecksums(buffer, page, page + length);
                    await _device.WriteAsync(page, bytes, cancellationToken).ConfigureAwait(false);
                }

                if (page + length == final && length < pageSize)
                {
                    bytes.Span[..length].CopyTo(tailPagePrefix);
                }

                long replayedBytes = page + length - firstPage;
                progress?.Report(new RecoveryProgress(replayedBytes, totalBytes));
                if (replayedBytes >= nextProgressLog)
                {
                    CheckpointLog.ReplayProgress(_logger, choice.Manifest.Token, replayedBytes, totalBytes);
                    nextProgressLog += ProgressLogBytes;
                }
            }
        }
        finally
        {
            if (snapshotStream is not null)
            {
                await snapshotStream.DisposeAsync().ConfigureAwait(false);
            }
        }

        return (records, tailPagePrefix);
    }

    /// <summary>
    /// Replays the records of one page whose addresses lie in [from, to), checking first (with
    /// <paramref name="verify"/>) that each is the record that was written: the log below a commit's final address was
    /// durable before the commit, so a mismatch is damage, and recovery stops rather than rebuild from it.
    /// </summary>
    /// <exception cref="CorruptLogException">A record's checksum does not match.</exception>
    private unsafe (long Records, bool Changed) ReplayPage(
        AlignedBuffer buffer, long page, long from, long to, CheckpointMetadata commit, bool verify)
    {
        long records = 0;
        bool changed = false;
        // The replay may start at a begin address a user chose; the buffer holds the page from its start.
        var walk = new PageRecords<TKey, TValue>(buffer.Pointer, page, _engine.Log.PageSize, from, to,
            fromIsRecordStart: from == page);
        while (walk.MoveNext())
        {
            if (verify && !walk.Current.ChecksumMatches)
            {
                throw new CorruptLogException(walk.Address, _device.DescribeAddress(walk.Address),
                    "the record's checksum does not match, below the final address of the checkpoint being recovered");
            }

            changed |= _engine.ReplayRecord(walk.Current, walk.Address, commit.Version, commit.StartAddress);
            records++;
        }

        return (records, changed);
    }

    private unsafe void WriteChecksums(AlignedBuffer buffer, long page, long to) =>
        RecordFormat<TKey, TValue>.Instance.WriteChecksums(buffer.Pointer, page, _engine.Log.PageSize, page,
            to);
}
