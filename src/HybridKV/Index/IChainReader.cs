namespace HybridKV.Index;

/// <summary>
/// What a bucket split needs from the log to divide a hash chain between the two buckets it becomes (FASTER
/// appendix B): the key hash of an in-memory record and its link. The index knows no key type; the engine does.
/// </summary>
internal interface IChainReader
{
    /// <summary>Records below this address are on the device: a split cannot look at their keys.</summary>
    long HeadAddress { get; }

    /// <summary>Records below this address are gone: a chain ends there.</summary>
    long BeginAddress { get; }

    /// <summary>
    /// The 64-bit key hash of the record at <paramref name="address"/> (at or above the head address, read under epoch
    /// protection), its previous address, and whether it is invalid (in no chain a reader follows).
    /// </summary>
    long KeyHashAt(long address, out long previousAddress, out bool invalid);
}
