namespace HybridKV.Index;

/// <summary>
/// A reference to one entry word of the index together with the value observed there, which is what a later
/// compare-and-swap expects to find (FASTER §3.2).
/// </summary>
internal ref struct IndexSlot
{
    /// <summary>The entry word inside a bucket.</summary>
    public ref long Word;

    /// <summary>The value read from <see cref="Word"/> when the slot was found.</summary>
    public HashBucketEntry Observed;

    public IndexSlot(ref long word, HashBucketEntry observed)
    {
        Word = ref word;
        Observed = observed;
    }

    /// <summary>The log address the entry pointed to when observed.</summary>
    public readonly long Address => Observed.Address;
}
