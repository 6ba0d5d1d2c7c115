namespace HybridKV.Index;

/// <summary>
/// A reference to one entry word of the index together with the value observed there, which is what a later
/// compare-and-swap expects to find (FASTER §3.2), and the index's resize status when the entry was found.
/// </summary>
internal ref struct IndexSlot
{
    /// <summary>The entry word inside a bucket.</summary>
    public ref long Word;

    /// <summary>The value read from <see cref="Word"/> when the slot was found.</summary>
    public HashBucketEntry Observed;

    /// <summary>
    /// The <see cref="ResizeState"/> word the find read: the swap is allowed only while the index still has it, so that
    /// no update lands in a table whose chunk was split meanwhile (FASTER appendix B).
    /// </summary>
    public readonly long ResizeWord;

    public IndexSlot(ref long word, HashBucketEntry observed, long resizeWord)
    {
        Word = ref word;
        Observed = observed;
        ResizeWord = resizeWord;
    }

    /// <summary>The log address the entry pointed to when observed.</summary>
    public readonly long Address => Observed.Address;

    /// <summary>
    /// Whether the find ran while the index prepared a resize: such a slot may be read but never swung, and an
    /// operation that needs to swing it starts over once the epoch has moved (<see cref="ResizePhase.PrepareToResize"/>).
    /// </summary>
    public readonly bool FoundWhilePreparing =>
        (ResizeWord & ResizeState.PhaseMask) == (long)ResizePhase.PrepareToResize;
}
