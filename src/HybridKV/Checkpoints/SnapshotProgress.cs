using System.Runtime.CompilerServices;
using HybridKV.Epochs;
using HybridKV.Utilities;

namespace HybridKV.Checkpoints;

/// <summary>
/// How far a snapshot has copied the log (CPR App. D), so that updates go back in place page by page as the copy
/// passes, not only when it ends. Two offsets, as the read-only and safe read-only offsets of FASTER §5.2: below
/// <see cref="Run.Copied"/> a record of the committed version is in the snapshot; below <see cref="Run.SafeCopied"/>,
/// set an epoch later, no update that saw the record still uncopied (and so copies it to the tail) can be running, and
/// it may change in place. Between the two an update waits, or the copy could lose it (FASTER §6.2's lost update, in
/// the other direction).
/// </summary>
internal sealed class SnapshotProgress(LightEpoch epoch)
{
    private static readonly Action<object?, long> s_publishSafe =
        static (run, address) => ((Run)run!).PublishSafe(address);

    // A fresh run per commit: an epoch action of the last snapshot that runs late raises that run's offset, never this
    // one's.
    private Run _run = new();

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
    public Standing Of(long address)
    {
        Run run = Volatile.Read(ref _run);
        return address < Volatile.Read(ref run.SafeCopied) ? Standing.Copied
            : address < Volatile.Read(ref run.Copied) ? Standing.Copying
            : Standing.NotCopied;
    }

    /// <summary>
    /// Forgets the last snapshot's progress. Only while no session can still see that snapshot's capture (once every
    /// session has seen the next commit's PREPARE), since to a session still seeing it this makes records uncopied.
    /// </summary>
    public void Reset() => Volatile.Write(ref _run, new Run());

    /// <summary>Everything below <paramref name="address"/> is in the snapshot.</summary>
    public void Advance(long address)
    {
        Run run = Volatile.Read(ref _run);
        Volatile.Write(ref run.Copied, address);
        epoch.BumpCurrentEpoch(s_publishSafe, run, address);
    }

    /// <summary>
    /// Everything below <paramref name="address"/> is in the snapshot; completes once updates may change it in place,
    /// which the commit waits for before REST lets every session do so.
    /// </summary>
    public Task AdvanceAsync(long address)
    {
        Run run = Volatile.Read(ref _run);
        var safe = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Volatile.Write(ref run.Copied, address);
        epoch.BumpCurrentEpoch(() =>
        {
            run.PublishSafe(address);
            safe.TrySetResult();
        });
        return safe.Task;
    }

    private sealed class Run
    {
        public long Copied;
        public long SafeCopied;

        public void PublishSafe(long address) => Monotonic.TryRaise(ref SafeCopied, address);
    }
}
