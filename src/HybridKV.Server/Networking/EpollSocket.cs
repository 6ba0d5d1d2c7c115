using System.IO.Pipelines;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace HybridKV.Server.Networking;

/// <summary>
/// A connection's socket served by an <see cref="EpollLoop"/>: what it receives goes into <see cref="Input"/> (a pipe
/// whose reader runs inline, on the loop's thread, as the bytes arrive); <see cref="Output"/> sends without waiting
/// while the socket takes the bytes, and waits for the loop to report it writable when it does not. The socket is
/// never used through .NET's asynchronous operations, so that .NET's own socket engine never watches it too.
/// </summary>
internal sealed class EpollSocket : IDisposable
{
    // Large enough that a pipelined batch of small commands arrives in one segment, and is parsed in place.
    private const int SegmentSize = 64 * 1024;

    // The least room a receive asks the pipe for.
    private const int ReceiveHint = 16 * 1024;

    private readonly EpollLoop _loop;
    private readonly Socket _socket;
    private readonly int _fd;
    private readonly long _id;
    private readonly Pipe _input;

    // Guards the interest, the pause and the writable waiter (the loop thread and the connection's both change them).
    private readonly object _gate = new();
    private TaskCompletionSource? _writable;
    private volatile bool _inputPaused;
    private bool _disposed;

    /// <param name="loop">The loop that watches the socket.</param>
    /// <param name="socket">An accepted socket, not used asynchronously before (its descriptor is non-blocking).</param>
    /// <param name="maxRequestBytes">The largest request: input waits in the pipe up to a little more than this before
    /// the loop stops receiving, so that one whole request always fits.</param>
    public EpollSocket(EpollLoop loop, Socket socket, long maxRequestBytes)
    {
        _loop = loop;
        _socket = socket;
        _fd = (int)socket.SafeHandle.DangerousGetHandle();
        long pause = maxRequestBytes + SegmentSize;
        _input = new Pipe(new PipeOptions(pauseWriterThreshold: pause, resumeWriterThreshold: pause / 2,
            minimumSegmentSize: SegmentSize, readerScheduler: PipeScheduler.Inline, writerScheduler: PipeScheduler.Inline,
            useSynchronizationContext: false));
        Output = new SendStream(this);
        // Before registering: a socket whose request and end are already there is reported at once, on the loop's
        // thread, and leaving the set at its end needs the id (without it, the end was reported again and the loop
        // closed the socket before the connection replied).
        _id = loop.NewId();
        loop.Register(_id, this, _fd, Interest(writable: false));
    }

    /// <summary>What the socket received.</summary>
    public PipeReader Input => _input.Reader;

    /// <summary>Sends to the socket; disposing it closes the socket.</summary>
    public Stream Output { get; }

    private int Interest(bool writable) =>
        (_inputPaused ? 0 : Epoll.In | Epoll.ReadHangUp) | (writable ? Epoll.Out : 0);

    /// <summary>On the loop's thread: the socket is readable, writable or failed.</summary>
    public void OnEvents(int events)
    {
        try
        {
            if ((events & (Epoll.Out | Epoll.Error | Epoll.HangUp)) != 0)
            {
                SignalWritable();
            }

            if ((events & (Epoll.In | Epoll.ReadHangUp | Epoll.Error | Epoll.HangUp)) == 0)
            {
                return;
            }

            if (!_inputPaused)
            {
                Receive();
            }
            else if ((events & (Epoll.Error | Epoll.HangUp)) != 0)
            {
                // Reported whatever the interest: while paused, the socket would be reported again at once, forever.
                // The peer is gone both ways, so nothing it sent can be answered.
                Unregister();
                _input.Writer.Complete(new SocketException((int)SocketError.ConnectionReset));
            }
        }
#pragma warning disable CA1031 // The loop serves every other socket: this connection's failure is its reader's.
        catch (Exception error)
#pragma warning restore CA1031
        {
            _input.Writer.Complete(error);
            Dispose();
        }
    }

    /// <summary>One receive (a level-triggered loop reports the socket again while data is left), then the pipe's
    /// flush, which runs the connection's loop on this thread.</summary>
    /// <remarks>The descriptor is referenced only for the system call: the connection may close its socket while it
    /// runs inside the flush, and closing waits for every reference.</remarks>
    private unsafe void Receive()
    {
        PipeWriter writer = _input.Writer;
        Memory<byte> memory = writer.GetMemory(ReceiveHint);
        nint received;
        bool added = false;
        try
        {
            _socket.SafeHandle.DangerousAddRef(ref added);
            fixed (byte* buffer = memory.Span)
            {
                received = Epoll.Receive(_fd, buffer, memory.Length, Epoll.DontWait);
            }
        }
        catch (ObjectDisposedException)
        {
            return;
        }
        finally
        {
            if (added)
            {
                _socket.SafeHandle.DangerousRelease();
            }
        }

        if (received > 0)
        {
            writer.Advance((int)received);
            ValueTask<FlushResult> flush = writer.FlushAsync();
            if (!flush.IsCompletedSuccessfully)
            {
                // The connection has more waiting than it may hold: stop receiving until it reads.
                PauseUntil(flush);
            }
            else if (flush.Result.IsCompleted)
            {
                // The connection stopped reading: it is closing.
                Unregister();
            }

            return;
        }

        int errno = received == 0 ? 0 : Marshal.GetLastPInvokeError();
        if (errno is Epoll.WouldBlock or Epoll.Interrupted)
        {
            return;
        }

        Unregister();
        writer.Complete(errno == 0 ? null : new SocketException(errno));
    }

    private void PauseUntil(ValueTask<FlushResult> flush)
    {
        SetPaused(true);
        _ = ResumeAsync(flush);
    }

    private async Task ResumeAsync(ValueTask<FlushResult> flush)
    {
        FlushResult result;
        try
        {
            result = await flush.ConfigureAwait(false);
        }
        catch (InvalidOperationException)
        {
            return;
        }

        if (!result.IsCompleted)
        {
            SetPaused(false);
        }
    }

    private void SetPaused(bool paused)
    {
        lock (_gate)
        {
            _inputPaused = paused;
            if (!_disposed)
            {
                _loop.Modify(_id, _fd, Interest(_writable is not null));
            }
        }
    }

    private void SignalWritable()
    {
        TaskCompletionSource? writable;
        lock (_gate)
        {
            writable = _writable;
            _writable = null;
            if (writable is not null && !_disposed)
            {
                _loop.Modify(_id, _fd, Interest(writable: false));
            }
        }

        writable?.TrySetResult();
    }

    private Task WaitWritableAsync(CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_writable is null)
            {
                _writable = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _loop.Modify(_id, _fd, Interest(writable: true));
            }

            return _writable.Task.WaitAsync(cancellationToken);
        }
    }

    private void Unregister()
    {
        lock (_gate)
        {
            if (!_disposed)
            {
                _disposed = true;
                _loop.Unregister(_id, _fd);
            }
        }
    }

    /// <summary>Leaves the loop's set, ends a wait to send and the connection's pending read (as cancelled: nothing
    /// more will arrive), then closes the socket.</summary>
    public void Dispose()
    {
        Unregister();
        TaskCompletionSource? writable;
        lock (_gate)
        {
            writable = _writable;
            _writable = null;
        }

        writable?.TrySetException(new ObjectDisposedException(nameof(EpollSocket)));
        _input.Reader.CancelPendingRead();
        _socket.Dispose();
    }

    /// <summary>Sends as much as the socket takes at once, each time, and waits for writability only when it takes
    /// nothing more.</summary>
    private ValueTask SendAsync(ReadOnlyMemory<byte> bytes, CancellationToken cancellationToken)
    {
        while (!bytes.IsEmpty)
        {
            nint sent = SendOnce(bytes.Span);
            if (sent < 0)
            {
                return SendSlowAsync(bytes, cancellationToken);
            }

            bytes = bytes[(int)sent..];
        }

        return ValueTask.CompletedTask;
    }

    /// <summary>The socket just took nothing more: waits for the loop to report it writable, then sends on.</summary>
    private async ValueTask SendSlowAsync(ReadOnlyMemory<byte> bytes, CancellationToken cancellationToken)
    {
        while (!bytes.IsEmpty)
        {
            await WaitWritableAsync(cancellationToken).ConfigureAwait(false);
            nint sent;
            while (!bytes.IsEmpty && (sent = SendOnce(bytes.Span)) >= 0)
            {
                bytes = bytes[(int)sent..];
            }
        }
    }

    /// <summary>Bytes sent, or -1 when the socket takes none now; throws on a failure.</summary>
    private unsafe nint SendOnce(ReadOnlySpan<byte> bytes)
    {
        bool added = false;
        _socket.SafeHandle.DangerousAddRef(ref added);
        try
        {
            nint sent;
            fixed (byte* buffer = bytes)
            {
                sent = Epoll.Send(_fd, buffer, bytes.Length, Epoll.DontWait | Epoll.NoSignal);
            }

            if (sent >= 0)
            {
                return sent;
            }

            int errno = Marshal.GetLastPInvokeError();
            return errno is Epoll.WouldBlock or Epoll.Interrupted ? -1
                : throw new IOException("Sending to the client failed.", new SocketException(errno));
        }
        finally
        {
            if (added)
            {
                _socket.SafeHandle.DangerousRelease();
            }
        }
    }

    /// <summary>The write side as a stream, for <see cref="PipeWriter.Create(Stream, StreamPipeWriterOptions?)"/> and
    /// the few replies written before a connection starts.</summary>
    private sealed class SendStream(EpollSocket socket) : Stream
    {
        public override bool CanRead => false;

        public override bool CanSeek => false;

        public override bool CanWrite => true;

        public override long Length => throw new NotSupportedException();

        public override long Position
        {
            get => throw new NotSupportedException();
            set => throw new NotSupportedException();
        }

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) =>
            socket.SendAsync(buffer, cancellationToken);

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
            socket.SendAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

        // A blocking write on a loop thread would wait for the loop to report the socket writable: never.
        public override void Write(byte[] buffer, int offset, int count) =>
            throw new NotSupportedException("Writes to a connection's socket are asynchronous.");

        public override Task FlushAsync(CancellationToken cancellationToken) => Task.CompletedTask;

        public override void Flush()
        {
        }

        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                socket.Dispose();
            }

            base.Dispose(disposing);
        }
    }
}
