using System.Text.Json;

namespace HybridKV.Checkpoints;

/// <summary>One part of a checkpoint as its manifest records it: enough to tell a complete part from a torn one.</summary>
/// <param name="Name">The part's name within the checkpoint.</param>
/// <param name="Length">Its length in bytes.</param>
/// <param name="Crc32C">The CRC-32C of its bytes.</param>
public sealed record CheckpointPart(string Name, long Length, uint Crc32C);

/// <summary>What a committed checkpoint consists of, and the caller's metadata about it.</summary>
/// <param name="Token">The checkpoint's identity.</param>
/// <param name="Sequence">Its position among the catalog's checkpoints: larger is newer.</param>
/// <param name="CreatedUtc">When it was committed.</param>
/// <param name="Parts">Every part, with its length and checksum.</param>
/// <param name="Metadata">The caller's metadata (for CPR: versions, addresses, session commit points).</param>
public sealed record CheckpointManifest(
    Guid Token,
    long Sequence,
    DateTimeOffset CreatedUtc,
    IReadOnlyList<CheckpointPart> Parts,
    JsonElement Metadata);

/// <summary>The newest checkpoint that verified, and why any newer ones were passed over.</summary>
/// <param name="Manifest">The checkpoint to recover from, or null when the catalog holds no checkpoint at all.</param>
/// <param name="Skipped">Newer checkpoints that failed verification, each with the reason and the file at fault.</param>
public sealed record CheckpointSelection(CheckpointManifest? Manifest, IReadOnlyList<string> Skipped);
