namespace HybridKV;

/// <summary>
/// The user's read and update logic (FASTER appendix E). The store is generic over a <em>struct</em> implementing
/// this interface, so the JIT binds and inlines every callback; nothing here is called through an interface at run
/// time.
/// </summary>
/// <remarks>
/// <para>With <see cref="VarBytes"/> keys or values, callbacks receive a <see cref="VarBytes"/> describing the bytes
/// in the log (valid only during the call); a writer finds <see cref="VarBytes.Length"/> preset to the length the value
/// is written with and may set it to anything up to <see cref="VarBytes.Capacity"/>. In-place changes of such a value
/// are serialised by the store, and a concurrent reader may run more than once (the last run's output counts).</para>
/// <para>"Single" callbacks get exclusive access to the value they write or read. "Concurrent" callbacks and
/// <see cref="InPlaceUpdater"/> work on a value in the mutable region that other threads may read or update at the
/// same time: the implementation handles that (for example with <see cref="Interlocked"/> operations).</para>
/// <para>A callback that throws fails its operation, and the exception reaches the caller. A writer or updater of a new
/// record that throws leaves nothing behind: the record is never visible, not to reads and not after recovery. A
/// callback that changes a value in place (<c>ConcurrentWriter</c>, <see cref="InPlaceUpdater"/>) works on the live
/// value, so if it throws it must do so before it changes anything.</para>
/// </remarks>
/// <typeparam name="TKey">The key type.</typeparam>
/// <typeparam name="TValue">The value type.</typeparam>
/// <typeparam name="TInput">What a read or RMW passes in (for example an increment).</typeparam>
/// <typeparam name="TOutput">What a read produces from the value.</typeparam>
/// <typeparam name="TContext">User state handed back to completion callbacks.</typeparam>
public interface IFunctions<TKey, TValue, TInput, TOutput, TContext> : IKeyComparer<TKey>
{
    /// <summary>Reads a value that no thread is updating (a read-only record).</summary>
    void SingleReader(in TKey key, in TInput input, in TValue value, ref TOutput output);

    /// <summary>Reads a value that other threads may be updating in place.</summary>
    void ConcurrentReader(in TKey key, in TInput input, in TValue value, ref TOutput output);

    /// <summary>Writes an upserted value into a new record, with exclusive access.</summary>
    void SingleWriter(in TKey key, in TValue source, ref TValue destination);

    /// <summary>Overwrites a value in place, concurrently with other readers and writers.</summary>
    void ConcurrentWriter(in TKey key, in TValue source, ref TValue destination);

    /// <summary>Creates the value of a key that does not exist yet, for an RMW, with exclusive access.</summary>
    void InitialUpdater(in TKey key, in TInput input, ref TValue value);

    /// <summary>Updates a value in place for an RMW, concurrently with other readers and updaters.</summary>
    void InPlaceUpdater(in TKey key, in TInput input, ref TValue value);

    /// <summary>Writes the updated copy of a read-only value into a new record, with exclusive access.</summary>
    void CopyUpdater(in TKey key, in TInput input, in TValue oldValue, ref TValue newValue);

    /// <summary>
    /// For <see cref="VarBytes"/> values: the length of the value <see cref="InitialUpdater"/> will create, so that
    /// the record can be allocated before it is called. Not called for fixed-size values.
    /// </summary>
    /// <exception cref="NotSupportedException">Not implemented: an RMW on a store of <see cref="VarBytes"/> values
    /// needs it.</exception>
    int GetInitialValueLength(in TKey key, in TInput input) =>
        throw new NotSupportedException(
            $"An RMW on a store of {nameof(VarBytes)} values asks the functions how long the new value is: implement " +
            $"{nameof(GetInitialValueLength)} and {nameof(GetUpdatedValueLength)} in {GetType().Name}.");

    /// <summary>
    /// For <see cref="VarBytes"/> values: the length <paramref name="value"/> will have after an RMW with
    /// <paramref name="input"/>. If the record has room for it, <see cref="InPlaceUpdater"/> runs (and sets
    /// <see cref="VarBytes.Length"/>); otherwise <see cref="CopyUpdater"/> writes a new record with this length.
    /// Not called for fixed-size values.
    /// </summary>
    /// <exception cref="NotSupportedException">Not implemented: an RMW on a store of <see cref="VarBytes"/> values
    /// needs it.</exception>
    int GetUpdatedValueLength(in TKey key, in TInput input, in TValue value) =>
        throw new NotSupportedException(
            $"An RMW on a store of {nameof(VarBytes)} values asks the functions how long the updated value is: " +
            $"implement {nameof(GetInitialValueLength)} and {nameof(GetUpdatedValueLength)} in {GetType().Name}.");

    /// <summary>
    /// Reports the end of a read that returned <see cref="Status.Pending"/> from a blocking <c>Read</c>, inside the
    /// caller's <c>CompletePending</c>; the output is the callback's. Asynchronous reads, and reads that wait inside
    /// the call, return their output to their caller instead and do not call this.
    /// </summary>
    void ReadCompletionCallback(in TKey key, in TInput input, in TOutput output, TContext context, Status status);

    /// <summary>
    /// Reports the end of an RMW that returned <see cref="Status.Pending"/> from a blocking <c>RMW</c>, inside the
    /// caller's <c>CompletePending</c>. Not called for <c>RMWAsync</c>, whose task reports the status.
    /// </summary>
    void RMWCompletionCallback(in TKey key, in TInput input, TContext context, Status status);

    /// <summary>
    /// Reports the end of a delete that returned <see cref="Status.Pending"/> from a blocking <c>Delete</c>, inside
    /// the caller's <c>CompletePending</c>. Not called for <c>DeleteAsync</c>, whose task reports the status.
    /// </summary>
    void DeleteCompletionCallback(in TKey key, TContext context, Status status);
}
