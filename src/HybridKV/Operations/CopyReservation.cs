namespace HybridKV.Operations;

/// <summary>
/// Room at the tail taken with one atomic add for a batch of copies of one record size (log compaction's, under one
/// protection): the writers and the compactor both take their records from the tail word, and a copy taken between two
/// upserts moved that word's cache line, and the line of the records beside it, from one core to the other and back.
/// Its slots are used only while the system state is the one it was taken in, so a copy lies where one taken alone
/// would (a checkpoint's final address never falls between its taking and its use); what is left is written as
/// unused records (<see cref="StoreEngine{TKey, TValue, TInput, TOutput, TContext, TFunctions}.ReleaseReservation"/>)
/// before the owner leaves protection, so no flush and no checkpoint ever sees a slot empty.
/// </summary>
internal sealed class CopyReservation
{
    /// <summary>The most copies one reservation takes room for.</summary>
    public const int MaxCopies = 64;

    /// <summary>The next free slot (<see cref="End"/> when none is left).</summary>
    internal long Next { get; set; }

    /// <summary>The end of the room taken.</summary>
    internal long End { get; set; }

    /// <summary>The size of each slot.</summary>
    internal int RecordSize { get; set; }

    /// <summary>The system state word the room was taken in.</summary>
    internal long StateWord { get; set; }

    /// <summary>How many copies of the next one's size the owner may still make in this protected stretch: the size of
    /// the next room taken.</summary>
    public int Expected { get; set; }

    /// <summary>Whether slots are left that a copy made in <paramref name="stateWord"/> may use (slots of
    /// <see cref="RecordSize"/> bytes).</summary>
    internal bool HasRoomIn(long stateWord) => Next < End && stateWord == StateWord;
}
