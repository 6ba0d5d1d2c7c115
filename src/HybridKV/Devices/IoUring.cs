using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Threading.Tasks.Sources;
using Microsoft.Win32.SafeHandles;

namespace HybridKV.Devices;

/// <summary>
/// Reads through Linux's io_uring, by raw system calls: a caller writes a request into the submission ring and enters
/// the kernel once; one reaper thread waits for completions and completes each request's <see cref="ValueTask{T}"/>.
/// Many reads are in flight at once without a thread each, so the device's queue stays full (issue 19: two blocking
/// threads kept at most two reads in flight, a quarter of what this machine's disk serves at depth 64).
/// </summary>
/// <remarks>
/// At most <see cref="Depth"/> requests are in flight: the completion ring has twice as many entries, so it never
/// overflows. A request holds a reference on its file handle until it completes, so a segment deleted meanwhile cannot
/// have its descriptor reused under the read.
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
    private readonly uint* _sqTail;
    private readonly uint _sqMask;
    private readonly uint* _sqArray;
    private readonly Sqe* _sqes;
    private readonly uint* _cqHead;
    private readonly uint* _cqTail;
    private readonly uint _cqMask;
    private readonly Cqe* _cqes;
    private readonly Request[] _requests;
    private readonly Stack<Request> _free;
    private readonly SemaphoreSlim _slots;
    private readonly CancellationTokenSource _closing = new();
    private readonly object _gate = new();
    private readonly Thread _reaper;
    private int _inFlight;
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
        _sqTail = (uint*)(sq + parameters.SqOff.Tail);
        _sqMask = *(uint*)(sq + parameters.SqOff.RingMask);
        _sqArray = (uint*)(sq + parameters.SqOff.Array);
        _sqes = (Sqe*)_entries;
        _cqHead = (uint*)(cq + parameters.CqOff.Head);
        _cqTail = (uint*)(cq + parameters.CqOff.Tail);
        _cqMask = *(uint*)(cq + parameters.CqOff.RingMask);
        _cqes = (Cqe*)(cq + parameters.CqOff.Cqes);
        _requests = new Request[depth];
        _free = new Stack<Request>(depth);
        for (int i = depth - 1; i >= 0; i--)
        {
            _requests[i] = new Request(this, i);
            _free.Push(_requests[i]);
        }

        _slots = new SemaphoreSlim(depth, depth);
        _reaper = new Thread(Reap) { IsBackground = true, Name = "HybridKV io_uring" };
        _reaper.Start();
    }

    /// <summary>How many requests may be in flight at once.</summary>
    public int Depth { get; }

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
        int fd = (int)Syscall(SetupSyscall, depth, (nint)(&parameters), 0, 0, 0, 0);
        if (fd < 0)
        {
            whyNot = $"io_uring_setup failed (errno {Marshal.GetLastPInvokeError()})";
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
    /// Reads up to <paramref name="length"/> bytes at <paramref name="offset"/> of <paramref name="file"/> into
    /// <paramref name="destination"/>, which stays pinned by the caller until the read completes.
    /// </summary>
    /// <returns>The bytes read (fewer at the end of the file), or a negative errno.</returns>
    public ValueTask<int> ReadAsync(
        SafeFileHandle file, nint destination, int length, long offset, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<int>(cancellationToken);
        }

        return _slots.Wait(0, CancellationToken.None)
            ? Submit(file, destination, length, offset)
            : ReadWhenFreeAsync(file, destination, length, offset, cancellationToken);
    }

    private ValueTask<int> Submit(SafeFileHandle file, nint destination, int length, long offset)
    {
        bool referenced = false;
        Request request;
        lock (_gate)
        {
            if (_stopping)
            {
                _slots.Release();
                throw new ObjectDisposedException(nameof(IoUring), "The device's io_uring was closed.");
            }

            try
            {
                file.DangerousAddRef(ref referenced);
            }
            catch (ObjectDisposedException)
            {
                _slots.Release();
                throw;
            }

            request = _free.Pop();
            request.File = file;
            Interlocked.Increment(ref _inFlight);
            Push(OpRead, (int)file.DangerousGetHandle(), offset, (ulong)destination, (uint)length, (ulong)request.Index);
        }

        return new ValueTask<int>(request, request.Version);
    }

    /// <summary>Writes one entry at the submission tail and hands it to the kernel. Under <see cref="_gate"/>.</summary>
    private void Push(byte opcode, int fd, long offset, ulong address, uint length, ulong userData)
    {
        uint tail = *_sqTail;
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
        while (true)
        {
            long submitted = Syscall(EnterSyscall, _ringFd, 1, 0, 0, 0, 0);
            int error = submitted < 0 ? Marshal.GetLastPInvokeError() : 0;
            // Not submitted now, the entry stays in the ring and goes with the next submission; but every caller
            // counts on its own, so it waits for the kernel only when the kernel is merely busy.
            if (submitted >= 0 || (error != Interrupted && error != TryAgain && error != Busy))
            {
                Debug.Assert(submitted >= 0, $"io_uring_enter failed with errno {error}");
                return;
            }
        }
    }

    private void Reap()
    {
        // Completions are taken as the kernel posts them; the tail is read with acquire semantics, the head published
        // with release, as the ring's protocol asks.
        bool stopSeen = false;
        while (!stopSeen || Volatile.Read(ref _inFlight) > 0)
        {
            long waited = Syscall(EnterSyscall, _ringFd, 0, 1, (nint)EnterGetEvents, 0, 0);
            Debug.Assert(waited >= 0 || Marshal.GetLastPInvokeError() == Interrupted,
                $"io_uring_enter (wait) failed with errno {Marshal.GetLastPInvokeError()}");

            uint head = *_cqHead;
            uint tail = Volatile.Read(ref *_cqTail);
            while (head != tail)
            {
                Cqe completion = _cqes[head & _cqMask];
                head++;
                if (completion.UserData == StopToken)
                {
                    stopSeen = true;
                    continue;
                }

                Request request = _requests[(int)completion.UserData];
                request.File!.DangerousRelease();
                request.File = null;
                Interlocked.Decrement(ref _inFlight);
                request.Complete(completion.Result);
            }

            Volatile.Write(ref *_cqHead, head);
        }
    }

    private void Return(Request request)
    {
        lock (_gate)
        {
            _free.Push(request);
        }

        _slots.Release();
    }

    /// <summary>Lets the reads in flight complete, then closes the ring.</summary>
    public void Dispose()
    {
        lock (_gate)
        {
            if (_stopping)
            {
                return;
            }

            _stopping = true;
            Push(OpNop, -1, 0, 0, 0, StopToken);
        }

        // Reads waiting for a free slot would wait for ever: they fail instead.
        _closing.Cancel();
        _reaper.Join();
        _ = Unmap(_entries, _entriesSize);
        _ = Unmap(_completionRing, _completionRingSize);
        _ = Unmap(_submissionRing, _submissionRingSize);
        _ = Close(_ringFd);
        _closing.Dispose();
    }

    private static nint Map(nuint length, int fd, long offset)
    {
        const int ReadWrite = 0x1 | 0x2;
        const int SharedPopulate = 0x01 | 0x8000;
        nint address = Mmap(0, length, ReadWrite, SharedPopulate, fd, offset);
        if (address == -1)
        {
            throw new IOException($"Mapping an io_uring ring failed (errno {Marshal.GetLastPInvokeError()}).");
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

    /// <summary>One request slot: its own <see cref="ValueTask{T}"/> source, reused once its result was taken.</summary>
    private sealed class Request(IoUring ring, int index) : IValueTaskSource<int>
    {
        private ManualResetValueTaskSourceCore<int> _core = new() { RunContinuationsAsynchronously = true };

        public int Index { get; } = index;

        public SafeFileHandle? File { get; set; }

        public short Version => _core.Version;

        public void Complete(int result) => _core.SetResult(result);

        public int GetResult(short token)
        {
            try
            {
                return _core.GetResult(token);
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

/// <summary>The waiting path, outside the unsafe part: an await may not appear in an unsafe context.</summary>
internal sealed partial class IoUring
{
    private async ValueTask<int> ReadWhenFreeAsync(
        SafeFileHandle file, nint destination, int length, long offset, CancellationToken cancellationToken)
    {
        using var waiting = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _closing.Token);
        try
        {
            await _slots.WaitAsync(waiting.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            throw new ObjectDisposedException(nameof(IoUring), "The device's io_uring was closed while the read waited.");
        }

        return await Submit(file, destination, length, offset).ConfigureAwait(false);
    }
}
