namespace HybridKV.Checkpoints;

/// <summary>
/// Which operations of one session a commit holds (CPR §2; relaxed CPR, DPR paper §5.4): every operation with a serial
/// number up to <see cref="UntilSerialNo"/> except those in <see cref="ExcludedSerialNos"/>, and none after.
/// </summary>
/// <param name="UntilSerialNo">The session's CPR point: the last serial number issued before it; 0 for none.</param>
/// <param name="ExcludedSerialNos">Operations up to the CPR point that were still pending there; they are not in this
/// commit (they count as issued after it), and are listed in ascending order. Always empty with strict CPR.</param>
public sealed record CommitPoint(long UntilSerialNo, IReadOnlyList<long> ExcludedSerialNos)
{
    /// <summary>The commit point of a session none of whose operations is durable.</summary>
    public static CommitPoint None { get; } = new(0, Array.Empty<long>());

    /// <summary>Whether the operation numbered <paramref name="serialNo"/> is part of this commit.</summary>
    public bool Includes(long serialNo) =>
        serialNo >= 1 && serialNo <= UntilSerialNo && !ExcludedSerialNos.Contains(serialNo);

    /// <inheritdoc/>
    public bool Equals(CommitPoint? other) =>
        other is not null && other.UntilSerialNo == UntilSerialNo &&
        other.ExcludedSerialNos.SequenceEqual(ExcludedSerialNos);

    /// <inheritdoc/>
    public override int GetHashCode() => HashCode.Combine(UntilSerialNo, ExcludedSerialNos.Count);

    /// <inheritdoc/>
    public override string ToString() => ExcludedSerialNos.Count == 0
        ? $"until {UntilSerialNo}"
        : $"until {UntilSerialNo} except {string.Join(", ", ExcludedSerialNos)}";
}
