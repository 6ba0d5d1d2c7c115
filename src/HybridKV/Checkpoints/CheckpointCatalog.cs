using System.Text;
using System.Text.Json;

namespace HybridKV.Checkpoints;

/// <summary>
/// The rules on top of a <see cref="CheckpointStore"/>: a checkpoint is written part by part, each part's length and
/// CRC-32C recorded, and becomes visible only when its manifest is committed after every part is durable; recovery
/// takes the newest checkpoint whose manifest and parts all verify, falling back past torn or corrupt ones.
/// </summary>
public sealed class CheckpointCatalog
{
    private const int ManifestFormat = 1;
    private static readonly JsonSerializerOptions JsonOptions = new(JsonSerializerDefaults.Web) { WriteIndented = true };

    private readonly CheckpointStore _store;

    // Manifests this catalog wrote or has read: a committed manifest never changes, so a running store lists its
    // checkpoints without parsing every manifest (each holding the session table) again at every checkpoint.
    private readonly System.Collections.Concurrent.ConcurrentDictionary<Guid, CheckpointManifest> _known = new();

    /// <summary>A catalog over <paramref name="store"/>.</summary>
    public CheckpointCatalog(CheckpointStore store)
    {
        ArgumentNullException.ThrowIfNull(store);
        _store = store;
    }

    /// <summary>Starts writing a new checkpoint; nothing of it is visible until <see cref="CheckpointWriter.CommitAsync"/>.</summary>
    public CheckpointWriter Begin() => new(this, Guid.NewGuid());

    /// <summary>
    /// Finds the newest checkpoint whose manifest parses and whose every part has the recorded length and checksum.
    /// </summary>
    /// <returns>The selection; its manifest is null only when the catalog holds no committed checkpoint.</returns>
    /// <exception cref="CorruptCheckpointException">Checkpoints exist, but none verifies.</exception>
    public async Task<CheckpointSelection> FindLatestCompleteAsync(CancellationToken cancellationToken = default)
    {
        var skipped = new List<string>();
        var manifests = new List<CheckpointManifest>();
        foreach (Guid token in await _store.ListCommittedAsync(cancellationToken).ConfigureAwait(false))
        {
            (CheckpointManifest? manifest, string? problem) = await TryReadManifestAsync(token, cancellationToken)
                .ConfigureAwait(false);
            if (manifest is null)
            {
                skipped.Add(problem!);
            }
            else
            {
                manifests.Add(manifest);
            }
        }

        foreach (CheckpointManifest manifest in manifests.OrderByDescending(m => m.Sequence))
        {
            string? problem = await VerifyPartsAsync(manifest, cancellationToken).ConfigureAwait(false);
            if (problem is null)
            {
                return new CheckpointSelection(manifest, skipped);
            }

            skipped.Add(problem);
        }

        if (skipped.Count > 0)
        {
            throw new CorruptCheckpointException(skipped);
        }

        return new CheckpointSelection(null, skipped);
    }

    /// <summary>Every committed checkpoint whose manifest parses, newest first (parts are not verified).</summary>
    public async Task<IReadOnlyList<CheckpointManifest>> ListAsync(CancellationToken cancellationToken = default)
    {
        var manifests = new List<CheckpointManifest>();
        foreach (Guid token in await _store.ListCommittedAsync(cancellationToken).ConfigureAwait(false))
        {
            if (_known.TryGetValue(token, out CheckpointManifest? known))
            {
                manifests.Add(known);
                continue;
            }

            (CheckpointManifest? manifest, _) = await TryReadManifestAsync(token, cancellationToken).ConfigureAwait(false);
            if (manifest is not null)
            {
                _known[token] = manifest;
                manifests.Add(manifest);
            }
        }

        return manifests.OrderByDescending(m => m.Sequence).ToList();
    }

    /// <summary>
    /// Keeps the <paramref name="keep"/> newest committed checkpoints (and any checkpoint one of them refers to) and
    /// deletes the rest, and, when no checkpoint is being written, the leftovers of interrupted ones.
    /// </summary>
    /// <param name="keep">How many of the newest committed checkpoints to keep, at least 1.</param>
    /// <param name="deleteUncommitted">Whether to delete checkpoints that were never committed.</param>
    /// <param name="referencedBy">Other checkpoints a kept one needs (for CPR, the one holding its index part).</param>
    /// <param name="cancellationToken">Cancels the deletions not yet started.</param>
    /// <returns>The tokens deleted.</returns>
    public async Task<IReadOnlyList<Guid>> ApplyRetentionAsync(
        int keep, bool deleteUncommitted, Func<CheckpointManifest, IEnumerable<Guid>>? referencedBy = null,
        CancellationToken cancellationToken = default) =>
        await ApplyRetentionAsync(keep, deleteUncommitted, referencedBy, belongs: null, cancellationToken)
            .ConfigureAwait(false);

    /// <summary>As the public overload, considering only the committed checkpoints that <paramref name="belongs"/>
    /// accepts (those of one log); the others are left alone.</summary>
    internal async Task<IReadOnlyList<Guid>> ApplyRetentionAsync(
        int keep, bool deleteUncommitted, Func<CheckpointManifest, IEnumerable<Guid>>? referencedBy,
        Func<CheckpointManifest, bool>? belongs, CancellationToken cancellationToken)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(keep, 1);
        IReadOnlyList<CheckpointManifest> listed = await ListAsync(cancellationToken).ConfigureAwait(false);
        var committedTokens = listed.Select(m => m.Token).ToHashSet();
        IReadOnlyList<CheckpointManifest> committed = belongs is null ? listed : listed.Where(belongs).ToList();
        var kept = committed.Take(keep).Select(m => m.Token).ToHashSet();
        foreach (CheckpointManifest manifest in committed.Take(keep))
        {
            kept.UnionWith(referencedBy?.Invoke(manifest) ?? []);
        }

        var deleted = new List<Guid>();
        IReadOnlyList<Guid> all = await _store.ListAllAsync(cancellationToken).ConfigureAwait(false);
        var candidates = committed.Select(m => m.Token).ToHashSet();
        foreach (Guid token in all)
        {
            bool isOldCommitted = candidates.Contains(token) && !kept.Contains(token);
            bool isLeftover = !committedTokens.Contains(token) && deleteUncommitted;
            if (isOldCommitted || isLeftover)
            {
                await DeleteAsync(token, cancellationToken).ConfigureAwait(false);
                deleted.Add(token);
            }
        }

        return deleted;
    }

    /// <summary>Opens a part of a verified checkpoint for reading.</summary>
    public Task<Stream> OpenPartAsync(CheckpointManifest manifest, string part, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(manifest);
        if (manifest.Parts.All(p => p.Name != part))
        {
            throw new ArgumentException($"Checkpoint {manifest.Token} has no part '{part}'.", nameof(part));
        }

        return _store.OpenPartAsync(manifest.Token, part, cancellationToken);
    }

    internal CheckpointStore Store => _store;

    internal Task DeleteAsync(Guid token, CancellationToken cancellationToken)
    {
        _known.TryRemove(token, out _);
        return _store.DeleteAsync(token, cancellationToken);
    }

    internal async Task<CheckpointManifest> CommitAsync(
        Guid token, IReadOnlyList<CheckpointPart> parts, JsonElement metadata, CancellationToken cancellationToken)
    {
        long sequence = (await ListAsync(cancellationToken).ConfigureAwait(false)).Select(m => m.Sequence)
            .DefaultIfEmpty(0).Max() + 1;
        var manifest = new CheckpointManifest(token, sequence, DateTimeOffset.UtcNow, parts, metadata);
        byte[] envelope = ChecksummedJson.Wrap(new ManifestBody(ManifestFormat, manifest), JsonOptions);
        await _store.CommitAsync(token, envelope, cancellationToken).ConfigureAwait(false);
        _known[token] = manifest;
        return manifest;
    }

    internal async Task<(CheckpointManifest? Manifest, string? Problem)> TryReadManifestAsync(
        Guid token, CancellationToken cancellationToken)
    {
        string where = _store.Describe(token, "manifest.json");
        try
        {
            byte[] bytes = await _store.ReadManifestAsync(token, cancellationToken).ConfigureAwait(false);
            ManifestBody? parsed = ChecksummedJson.TryUnwrap<ManifestBody>(bytes, JsonOptions, out string? problem);
            if (problem is not null)
            {
                return (null, $"{where}: the manifest is damaged: {problem}");
            }

            if (parsed is null || parsed.Format != ManifestFormat || parsed.Manifest.Token != token)
            {
                return (null, $"{where}: not a manifest of format {ManifestFormat} for checkpoint {token}");
            }

            return (parsed.Manifest with { Metadata = parsed.Manifest.Metadata.Clone() }, null);
        }
        catch (Exception error) when (error is JsonException or KeyNotFoundException or InvalidOperationException
                                          or FormatException or FileNotFoundException or DirectoryNotFoundException)
        {
            return (null, $"{where}: the manifest cannot be read ({error.Message})");
        }
        catch (Exception error) when (error is IOException or UnauthorizedAccessException)
        {
            throw Unreadable(where, error);
        }
    }

    internal async Task<string?> VerifyPartsAsync(CheckpointManifest manifest, CancellationToken cancellationToken)
    {
        byte[] buffer = new byte[1 << 16];
        foreach (CheckpointPart part in manifest.Parts)
        {
            string where = _store.Describe(manifest.Token, part.Name);
            try
            {
                await using Stream stream = await _store.OpenPartAsync(manifest.Token, part.Name, cancellationToken)
                    .ConfigureAwait(false);
                long length = 0;
                uint crc = 0;
                int read;
                while ((read = await stream.ReadAsync(buffer, cancellationToken).ConfigureAwait(false)) > 0)
                {
                    crc = Crc32C.Append(crc, buffer.AsSpan(0, read));
                    length += read;
                }

                if (length != part.Length)
                {
                    return $"{where}: {length} bytes, the manifest recorded {part.Length} (truncated or overwritten)";
                }

                if (crc != part.Crc32C)
                {
                    return $"{where}: the checksum does not match the manifest (corrupt)";
                }
            }
            catch (Exception error) when (error is FileNotFoundException or DirectoryNotFoundException)
            {
                return $"{where}: missing ({error.Message})";
            }
            catch (Exception error) when (error is IOException or UnauthorizedAccessException)
            {
                throw Unreadable(where, error);
            }
        }

        return null;
    }

    /// <summary>
    /// A checkpoint that is there but cannot be read now (an I/O error, not a missing part or a checksum mismatch) is
    /// not evidence of a torn checkpoint: falling back past it would make recovery delete it as newer than the one
    /// chosen. So recovery stops instead, having changed nothing.
    /// </summary>
    private static IOException Unreadable(string where, Exception error) => new(
        $"Recovery stopped without changing anything: {where} exists but cannot be read ({error.Message}). It is not " +
        "treated as damaged, because falling back to an older checkpoint would delete it; retry once the storage " +
        "reads again.", error);

    private sealed record ManifestBody(int Format, CheckpointManifest Manifest);
}
