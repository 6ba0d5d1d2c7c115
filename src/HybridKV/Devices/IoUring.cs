using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Threading.Tasks.Sources;
using Microsoft.Win32.SafeHandles;

namespace HybridKV.Devices;

/// <summary>
/// Reads through Linux's io_uring, by raw system calls: a caller writes a request into the submission ring and enters
/// the kernel once; one reaper thread waits for completions and completes each request's <see cref="ValueTask{T}"/>
/// (as does a thread about to block until its reads complete, when it finds completions waiting:
/// <see cref="TryTakeCompletions"/>). The requests that completions let into the kernel enter it with the reaper's
/// next wait, in one system call.
/// Many reads are in flight at once without a thread each, so the device's queue stays full (issue 19: two blocking
/// threads kept at most two reads in flight, a quarter of what this machine's disk serves at depth 64).
/// </summary>
/// <remarks>
/// At most <see cref="Depth"/> requests are in the kernel: the completion ring has twice as many entries, so it never
/// overflows; more wait in a queue and go in as completions make room. A request holds a reference on its file handle
/// until it completes, so a segment deleted meanwhile cannot have its descriptor reused under the read. Requests are
/// pooled objects that are their own <see cref="ValueTask"/> source, and a short read is continued by the reaper, so a
/// read allocates nothing (issue 19: an async method per read, and a semaphore wait per read beyond the depth, were
/// most of the 1.2 KB a read from the device allocated).
/// </remarks>
internal sealed unsafe partial class IoUring : IDisposable
{
    private const int SetupSyscall = 425;
    private const int EnterSyscall = 426;
    private const uint EnterGetEvents = 1;
    private const byte OpNop = 0;
    private const byte OpRead = 22;
    private const long SubmissionRingOffset = 0;
    private const long CompletionRingOffset = 0x8000000;
    private const long SubmissionEntriesOffset = 0x10000000;
    private const int Interrupted = 4;
    private const int TryAgain = 11;
    private const int Busy = 16;
    private const ulong StopToken = ulong.MaxValue;

    private readonly int _ringFd;
    private readonly nint _submissionRing;
    private readonly nuint _submissionRingSize;
    private readonly nint _completionRing;
    private readonly nuint _completionRingSize;
    private readonly nint _entries;
    private readonly nuint _entriesSize;
    private readonly uint* _sqHead;
    private readonly uint* _sqTail;
    private readonly uint _sqMask;
    private readonly uint* _sqArray;
    private readonly Sqe* _sqes;
    private readonly uint* _cqHead;
    private readonly uint* _cqTail;
    private readonly uint _cqMask;
    private readonly Cqe* _cqes;
    private readonly Stack<Request> _spare = new();
    private readonly List<Request> _all = new();
    private readonly Queue<Request> _waiting = new();
    private readonly object _gate = new();
    // Held while completions are taken from the ring (by the reaper, or by a thread about to wait for them).
    private readonly object _reapGate = new();
    private readonly Thread _reaper;
    private bool _stopSeen;
    private int _inKernel;
    // Entries written to the submission ring and not yet handed to the kernel (under _gate).
    private int _queued;
    private bool _stopping;

    private IoUring(int depth, int ringFd, in Params parameters)
    {
        Depth = depth;
        _ringFd = ringFd;
        _submissionRingSize = parameters.SqOff.Array + (parameters.SqEntries * sizeof(uint));
        _completionRingSize = parameters.CqOff.Cqes + (parameters.CqEntries * (nuint)sizeof(Cqe));
        _entriesSize = parameters.SqEntries * (nuint)sizeof(Sqe);
        _submissionRing = Map(_submissionRingSize, ringFd, SubmissionRingOffset);
        _completionRing = Map(_completionRingSize, ringFd, CompletionRingOffset);
        _entries = Map(_entriesSize, ringFd, SubmissionEntriesOffset);
        byte* sq = (byte*)_submissionRing;
        byte* cq = (byte*)_completionRing;
        _sqHead = (uint*)(sq + parameters.SqOff.Head);
        _sqTail = (uint*)(sq + parameters.SqOff.Tail);
        SubmissionEntries = (int)parameters.SqEntries;
        _sqMask = *(uint*)(sq + parameters.SqOff.RingMask);
        _sqArray = (uint*)(sq + parameters.SqOff.Array);
        _sqes = (Sqe*)_entries;
        _cqHead = (uint*)(cq + parameters.CqOff.Head);
        _cqTail = (uint*)(cq + parameters.CqOff.Tail);
        _cqMask = *(uint*)(cq + parameters.CqOff.RingMask);
        _cqes = (Cqe*)(cq + parameters.CqOff.Cqes);
        _reaper = new Thread(Reap) { IsBackground = true, Name = "HybridKV io_uring" };
        _reaper.Start();
    }

    /// <summary>How many requests may be in flight at once.</summary>
    public int Depth { get; }

    /// <summary>The submission ring's entries: at least <see cref="Depth"/> + 1 (every read and the stop).</summary>
    internal int SubmissionEntries { get; }

    /// <summary>
    /// Sets up a ring for <paramref name="depth"/> requests in flight, or says why not (not Linux, a kernel without
    /// io_uring, or one that forbids it, as some container sandboxes do): the caller then reads with threads.
    /// </summary>
    public static IoUring? TryCreate(int depth, out string? whyNot)
    {
        whyNot = null;
        if (!OperatingSystem.IsLinux())
        {
            whyNot = "io_uring is Linux only";
            return null;
        }

        var parameters = default(Params);
        // Entries wait in the submission ring until the reaper's next wait hands them over: room for every read the
        // depth allows plus the stop. Sized for the depth alone, the stop of a device closed while a completion had
        // just let the next read in was written over that read (a ring of depth 1 has one entry), which then never
        // completed, and closing waited for it for ever.
        int fd = (int)Syscall(SetupSyscall, depth + 1, (nint)(&parameters), 0, 0, 0, 0);
        if (fd < 0)
        {
            whyNot = $"io_uring_setup failed ({Libc.DescribeLastError()})";
            return null;
        }

        try
        {
            return new IoUring(depth, fd, parameters);
        }
        catch (Exception error) when (error is IOException)
        {
            _ = Close(fd);
            whyNot = error.Message;
            return null;
        }
    }

    /// <summary>
    /// Reads <paramref name="length"/> bytes at <paramref name="offset"/> of <paramref name="file"/> into
    /// <paramref name="pin"/>'s memory (zeros past the end of the file); the read owns <paramref name="pin"/> and
    /// releases it when it completes. A failed read throws what <paramref name="owner"/> makes of the errno. With
    /// <paramref name="completeInline"/>, the continuation runs on the reaper thread (for continuations that only hand
    /// the result on: one thread-pool hop less); otherwise on the thread pool.
    /// </summary>
    public ValueTask ReadAsync(IReadOwner owner, long segment, SafeFileHandle file, System.Buffers.MemoryHandle pin,
        int length, long offset, bool completeInline, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            pin.Dispose();
            return ValueTask.FromCanceled(cancellationToken);
        }

        bool referenced = false;
        Request request;
        lock (_gate)
        {
            if (_stopping)
            {
                pin.Dispose();
                throw new ObjectDisposedException(nameof(IoUring), "The device's io_uring was closed.");
            }

            try
            {
                file.DangerousAddRef(ref referenced);
            }
            catch (ObjectDisposedException)
            {
                pin.Dispose();
                throw;
            }

            if (!_spare.TryPop(out request!))
            {
                request = new Request(this, _all.Count);
                _all.Add(request);
            }

            request.Begin(owner, segment, file, pin, length, offset, completeInline);
            if (_inKernel < Depth)
            {
                QueueRest(request);
                SubmitQueued();
            }
            else
            {
                _waiting.Enqueue(request);
            }
        }

        return new ValueTask(request, request.Version);
    }

    /// <summary>Writes the unread rest of <paramref name="request"/> into the submission ring, counted as in the
    /// kernel (handed to it by the caller's <see cref="SubmitQueued"/> or the reaper's next wait). Under
    /// <see cref="_gate"/>.</summary>
    private void QueueRest(Request request)
    {
        _inKernel++;
        Push(OpRead, (int)request.File!.DangerousGetHandle(), request.Offset + request.Done,
            (ulong)(request.Address + request.Done), (uint)(request.Length - request.Done), (ulong)request.Index);
    }

    /// <summary>Writes one entry at the submission tail, for the next <see cref="SubmitQueued"/> or the reaper's next
    /// wait to hand to the kernel. Under <see cref="_gate"/>.</summary>
    private void Push(byte opcode, int fd, long offset, ulong address, uint length, ulong userData)
    {
        uint tail = *_sqTail;
        Debug.Assert(tail - Volatile.Read(ref *_sqHead) < (uint)SubmissionEntries,
            "an entry the kernel has not taken yet would be written over");
        uint index = tail & _sqMask;
        Sqe* entry = _sqes + index;
        *entry = default;
        entry->Opcode = opcode;
        entry->Fd = fd;
        entry->Offset = (ulong)offset;
        entry->Address = address;
        entry->Length = length;
        entry->UserData = userData;
        _sqArray[index] = index;
        Volatile.Write(ref *_sqTail, tail + 1);
        _queued++;
    }

    /// <summary>Hands the entries written since the last submission to the kernel. Under <see cref="_gate"/>.</summary>
    private void SubmitQueued()
    {
        while (_queued > 0)
        {
            long submitted = Syscall(EnterSyscall, _ringFd, _queued, 0, 0, 0, 0);
            int error = submitted < 0 ? Marshal.GetLastPInvokeError() : 0;
            if (submitted > 0)
            {
                _queued -= (int)submitted;
                continue;
            }

            // Retried only while the kernel is merely busy; an entry it refused for good stays queued for the next
            // submission.
            if (submitted == 0 || (error != Interrupted && error != TryAgain && error != Busy))
            {
                Debug.Assert(submitted >= 0, $"io_uring_enter failed with errno {error}");
                return;
            }
        }
    }

    /// <summary>Takes the count of entries queued for submission (the caller submits them). Under
    /// <see cref="_gate"/>.</summary>
    private int TakeQueued()
    {
        int queued = _queued;
        _queued = 0;
        return queued;
    }

    private void Reap()
    {
        while (!Volatile.Read(ref _stopSeen) || Volatile.Read(ref _inKernel) > 0)
        {
            // The reads the last completions let into the kernel go in with this wait: one system call a round, where a
            // call per read cost the reaper most of a core at 90,000 reads a second (bench/README.md, issue 19).
            int toSubmit;
            lock (_gate)
            {
                toSubmit = TakeQueued();
            }

            long entered = Syscall(EnterSyscall, _ringFd, toSubmit, 1, (nint)EnterGetEvents, 0, 0);
            int submitted = entered > 0 ? (int)Math.Min(entered, toSubmit) : 0;
            Debug.Assert(entered >= 0 || Marshal.GetLastPInvokeError() is Interrupted or TryAgain or Busy,
                $"io_uring_enter (wait) failed ({Libc.DescribeLastError()})");
            if (submitted < toSubmit)
            {
                lock (_gate)
                {
                    _queued += toSubmit - submitted;
                }
            }

            lock (_reapGate)
            {
                TakeCompletions();
            }
        }
    }

    /// <summary>
    /// Completes the reads the kernel has finished, on the caller's thread, if any are waiting and no other thread is
    /// taking them; for a thread about to block until reads complete. On two cores with two workers waiting for reads,
    /// the reaper thread was preempted by them far more often than with one (110,000 against 24,000 involuntary
    /// switches in 10 s), and completions sat in the ring meanwhile: a worker that takes them itself no longer waits
    /// for the reaper to be scheduled (bench/README.md, issue 19).
    /// </summary>
    /// <returns>Whether any read was completed.</returns>
    public bool TryTakeCompletions()
    {
        // Not from a continuation run while completions are taken (the lock is reentrant, the ring's head is not).
        if (Monitor.IsEntered(_reapGate) || !Monitor.TryEnter(_reapGate))
        {
            return false;
        }

        try
        {
            // Once closing began the reaper takes the rest (and the rings are unmapped under this lock).
            if (Volatile.Read(ref _stopping) || !TakeCompletions())
            {
                return false;
            }

            lock (_gate)
            {
                SubmitQueued();
            }

            return true;
        }
        finally
        {
            Monitor.Exit(_reapGate);
        }
    }

    /// <summary>Takes every completion the kernel has posted. Under <see cref="_reapGate"/>: the ring has one
    /// consumer at a time.</summary>
    private bool TakeCompletions()
    {
        // The tail is read with acquire semantics, the head published with release, as the ring's protocol asks.
        uint head = *_cqHead;
        uint tail = Volatile.Read(ref *_cqTail);
        if (head == tail)
        {
            return false;
        }

        bool stopTaken = false;
        while (head != tail)
        {
            Cqe completion = _cqes[head & _cqMask];
            head++;
            if (completion.UserData == StopToken)
            {
                stopTaken = true;
                continue;
            }

            Continue((int)completion.UserData, completion.Result);
        }

        Volatile.Write(ref *_cqHead, head);
        if (stopTaken)
        {
            if (Thread.CurrentThread == _reaper)
            {
                Volatile.Write(ref _stopSeen, true);
            }
            else
            {
                // The reaper waits in the kernel for a completion it can see: it gets the stop again.
                lock (_gate)
                {
                    Push(OpNop, -1, 0, 0, 0, StopToken);
                    SubmitQueued();
                }
            }
        }

        return true;
    }

    /// <summary>A completion of the request at <paramref name="index"/>: the rest read again after a short read, otherwise the
    /// request completes and a waiting one takes its place in the kernel.</summary>
    private void Continue(int index, int result)
    {
        Exception? failure = null;
        Request request;
        lock (_gate)
        {
            request = _all[index];
            _inKernel--;
            if (result > 0 && request.Done + result < request.Length)
            {
                request.Done += result;
                QueueRest(request);
                return;
            }

            if (_waiting.TryDequeue(out Request? next))
            {
                QueueRest(next);
            }
        }

        if (result < 0)
        {
            failure = request.Owner!.ReadFailed(request.Segment, request.Offset, request.Length, -result);
        }
        else if (result == 0)
        {
            // The end of the file: a segment never written that far reads as zeros.
            new Span<byte>((byte*)request.Address + request.Done, request.Length - request.Done).Clear();
        }

        request.Finish(failure);
    }

    private void Return(Request request)
    {
        lock (_gate)
        {
            _spare.Push(request);
        }
    }

    /// <summary>Lets the reads in the kernel complete, fails those waiting for room, then closes the ring.</summary>
    public void Dispose()
    {
        Request[] abandoned;
        lock (_gate)
        {
            if (_stopping)
            {
                return;
            }

            _stopping = true;
            Push(OpNop, -1, 0, 0, 0, StopToken);
            SubmitQueued();
            abandoned = [.. _waiting];
            _waiting.Clear();
        }

        // Reads waiting for room would wait for ever: they fail instead.
        foreach (Request request in abandoned)
        {
            request.Finish(new ObjectDisposedException(nameof(IoUring), "The device's io_uring was closed while the read waited."));
        }

        _reaper.Join();
        lock (_reapGate)
        {
            _ = Unmap(_entries, _entriesSize);
            _ = Unmap(_completionRing, _completionRingSize);
            _ = Unmap(_submissionRing, _submissionRingSize);
            _ = Close(_ringFd);
        }
    }

    private static nint Map(nuint length, int fd, long offset)
    {
        const int ReadWrite = 0x1 | 0x2;
        const int SharedPopulate = 0x01 | 0x8000;
        nint address = Mmap(0, length, ReadWrite, SharedPopulate, fd, offset);
        if (address == -1)
        {
            throw new IOException($"Mapping an io_uring ring failed ({Libc.DescribeLastError()}).");
        }

        return address;
    }

    [LibraryImport("libc", EntryPoint = "syscall", SetLastError = true)]
    private static partial long Syscall(long number, nint a1, nint a2, nint a3, nint a4, nint a5, nint a6);

    [LibraryImport("libc", EntryPoint = "mmap", SetLastError = true)]
    private static partial nint Mmap(nint address, nuint length, int protection, int flags, int fd, long offset);

    [LibraryImport("libc", EntryPoint = "munmap")]
    private static partial int Unmap(nint address, nuint length);

    [LibraryImport("libc", EntryPoint = "close")]
    private static partial int Close(int fd);

    /// <summary>Makes the exception a failed read throws (the owner knows the file's name).</summary>
    internal interface IReadOwner
    {
        /// <summary>The exception for reading <paramref name="length"/> bytes at <paramref name="offset"/> of
        /// <paramref name="segment"/>, which failed with <paramref name="errno"/>.</summary>
        Exception ReadFailed(long segment, long offset, int length, int errno);
    }

    /// <summary>One read: its own <see cref="ValueTask"/> source, back in the pool once its result was taken.</summary>
    private sealed class Request(IoUring ring, int index) : IValueTaskSource
    {
        private ManualResetValueTaskSourceCore<bool> _core = new() { RunContinuationsAsynchronously = true };
        private System.Buffers.MemoryHandle _pin;

        public int Index { get; } = index;

        public IReadOwner? Owner { get; private set; }

        public long Segment { get; private set; }

        public SafeFileHandle? File { get; private set; }

        public nint Address { get; private set; }

        public int Length { get; private set; }

        public long Offset { get; private set; }

        /// <summary>How many bytes earlier completions read.</summary>
        public int Done { get; set; }

        public short Version => _core.Version;

        public void Begin(IReadOwner owner, long segment, SafeFileHandle file, System.Buffers.MemoryHandle pin, int length,
            long offset, bool completeInline)
        {
            _core.RunContinuationsAsynchronously = !completeInline;
            Owner = owner;
            Segment = segment;
            File = file;
            _pin = pin;
            Address = (nint)pin.Pointer;
            Length = length;
            Offset = offset;
            Done = 0;
        }

        /// <summary>Lets go of the file and the memory, then completes the read's task.</summary>
        public void Finish(Exception? failure)
        {
            File!.DangerousRelease();
            File = null;
            Owner = null;
            _pin.Dispose();
            _pin = default;
            if (failure is null)
            {
                _core.SetResult(true);
            }
            else
            {
                _core.SetException(failure);
            }
        }

        public void GetResult(short token)
        {
            try
            {
                _core.GetResult(token);
            }
            finally
            {
                _core.Reset();
                ring.Return(this);
            }
        }

        public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

        public void OnCompleted(
            Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);
    }

    // The kernel's structures (include/uapi/linux/io_uring.h).

    [StructLayout(LayoutKind.Sequential)]
    private struct SqRingOffsets
    {
        public uint Head;
        public uint Tail;
        public uint RingMask;
        public uint RingEntries;
        public uint Flags;
        public uint Dropped;
        public uint Array;
        public uint Reserved1;
        public ulong UserAddress;
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct CqRingOffsets
    {
        public uint Head;
        public uint Tail;
        public uint RingMask;
        public uint RingEntries;
        public uint Overflow;
        public uint Cqes;
        public uint Flags;
        public uint Reserved1;
        public ulong UserAddress;
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct Params
    {
        public uint SqEntries;
        public uint CqEntries;
        public uint Flags;
        public uint SqThreadCpu;
        public uint SqThreadIdle;
        public uint Features;
        public uint WqFd;
        public uint Reserved0;
        public uint Reserved1;
        public uint Reserved2;
        public SqRingOffsets SqOff;
        public CqRingOffsets CqOff;
    }

    [StructLayout(LayoutKind.Explicit, Size = 64)]
    private struct Sqe
    {
        [FieldOffset(0)] public byte Opcode;
        [FieldOffset(4)] public int Fd;
        [FieldOffset(8)] public ulong Offset;
        [FieldOffset(16)] public ulong Address;
        [FieldOffset(24)] public uint Length;
        [FieldOffset(32)] public ulong UserData;
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct Cqe
    {
        public ulong UserData;
        public int Result;
        public uint Flags;
    }
}
