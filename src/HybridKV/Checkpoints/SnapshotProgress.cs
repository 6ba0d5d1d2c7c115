using System.Runtime.CompilerServices;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Checkpoints;

/// <summary>
/// How far a snapshot has copied the log (CPR App. D), so that updates go back in place page by page as the copy
/// passes, not only when it ends. Two offsets, as the read-only and safe read-only offsets of FASTER §5.2: below
/// <see cref="_copied"/> a record of the committed version is in the snapshot; below <see cref="_safeCopied"/>, set
/// an epoch later, no update that saw the record still uncopied (and so copies it to the tail) can be running, and it
/// may change in place. Between the two an update waits, or the copy could lose it (FASTER §6.2's lost update, in the
/// other direction).
/// </summary>
internal sealed class SnapshotProgress(LightEpoch epoch)
{
    private static readonly Action<object?, long> s_publishSafe =
        static (progress, address) => Monotonic.TryRaise(ref ((SnapshotProgress)progress!)._safeCopied, address);

    private long _copied;
    private long _safeCopied;

    /// <summary>Where a record of the committed version stands against the copy.</summary>
    public enum Standing
    {
        /// <summary>Not copied yet: an update copies the record to the tail.</summary>
        NotCopied,

        /// <summary>Copied, but an update that saw it uncopied may still be copying it: an update waits.</summary>
        Copying,

        /// <summary>Copied, and no copy of it is running: an update goes by the record's region.</summary>
        Copied,
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public Standing Of(long address) =>
        address < Volatile.Read(ref _safeCopied) ? Standing.Copied
        : address < Volatile.Read(ref _copied) ? Standing.Copying
        : Standing.NotCopied;

    /// <summary>
    /// Forgets the last snapshot's progress. Only while no session can still see that snapshot's capture (once every
    /// session has seen the next commit's PREPARE), since to a session still seeing it this makes records uncopied.
    /// </summary>
    public void Reset()
    {
        Volatile.Write(ref _safeCopied, 0);
        Volatile.Write(ref _copied, 0);
    }

    /// <summary>Everything below <paramref name="address"/> is in the snapshot.</summary>
    public void Advance(long address)
    {
        Volatile.Write(ref _copied, address);
        epoch.BumpCurrentEpoch(s_publishSafe, this, address);
    }

    /// <summary>
    /// Everything below <paramref name="address"/> is in the snapshot; completes once updates may change it in place,
    /// which the commit waits for before REST lets every session do so.
    /// </summary>
    public Task AdvanceAsync(long address)
    {
        var safe = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Volatile.Write(ref _copied, address);
        epoch.BumpCurrentEpoch(() =>
        {
            Monotonic.TryRaise(ref _safeCopied, address);
            safe.TrySetResult();
        });
        return safe.Task;
    }
}
