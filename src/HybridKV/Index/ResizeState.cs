using System.Runtime.CompilerServices;

namespace HybridKV.Index;

/// <summary>The phase of an index resize (FASTER appendix B).</summary>
internal enum ResizePhase : byte
{
    /// <summary>One table; operations use it directly.</summary>
    Stable = 0,

    /// <summary>
    /// The doubled table exists and is empty. Operations still find entries in the old table, but none may swing an
    /// entry there (<see cref="HashIndex.TryUpdateEntry"/> refuses): the epoch bump that ends this phase does not wait
    /// for operations that began in it, so a chunk may be split under them.
    /// </summary>
    PrepareToResize = 1,

    /// <summary>
    /// Every operation that could still swing an entry of the old table has left. Operations use the new table,
    /// splitting the old chunk their bucket comes from first (or waiting for the thread splitting it); a background
    /// task splits the rest.
    /// </summary>
    Resizing = 2,
}

/// <summary>
/// The index's resize status in one word, FASTER's ResizeStatus: the phase in the low two bits and a generation that
/// grows by one at every phase change above them. An <see cref="IndexSlot"/> carries the word its find read, so a
/// compare-and-swap can tell whether the table it points into may have been split since.
/// </summary>
internal readonly struct ResizeState
{
    public const long PhaseMask = 3;
    private const int GenerationShift = 2;

    public readonly long Word;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ResizeState(long word) => Word = word;

    public ResizePhase Phase => (ResizePhase)(Word & PhaseMask);

    public long Generation => Word >> GenerationShift;

    /// <summary>The word of the next phase change, into <paramref name="phase"/>.</summary>
    public ResizeState Next(ResizePhase phase) => new(((Generation + 1) << GenerationShift) | (long)phase);

    /// <summary>
    /// Whether an entry found under <paramref name="observed"/> may still be swung under <paramref name="current"/>:
    /// nothing moved since (same word), and the phase was not prepare-to-resize.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool AllowsUpdate(long observed, long current) =>
        ((observed ^ current) | (observed & (long)ResizePhase.PrepareToResize)) == 0;

    public override string ToString() => $"{Phase} (generation {Generation})";
}
