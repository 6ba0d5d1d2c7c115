using System.Buffers;
using System.IO.Pipelines;
using HybridKV.Server.Commands;
using HybridKV.Server.Hosting;
using HybridKV.Server.Protocol;

namespace HybridKV.Server.Networking;

/// <summary>
/// One client connection: reads requests from a <see cref="PipeReader"/>, runs every whole command of one read as a
/// batch inside one epoch protection of the connection's session, and flushes the batch's replies once.
/// </summary>
/// <remarks>
/// The loop stops a batch early only to wait: for a command that waits (a checkpoint, a scan), or when the replies
/// buffered exceed <see cref="RespServerOptions.MaxPendingOutputBytes"/> (the client must read them first, which is
/// the backpressure on a client that writes without reading). A malformed or oversized request gets an error reply,
/// and the connection is closed after the replies before it.
/// </remarks>
internal sealed class RespConnection : IDisposable
{
    // Bytes a request spanning buffer segments is copied into to be parsed whole; grows to the largest such request.
    private byte[] _contiguous = [];

    private readonly PipeReader _reader;
    private readonly PipeWriter _writer;
    private readonly CommandContext _context;
    private readonly CommandArguments _arguments = new();
    private readonly ServerContext _server;
    private readonly RespServerOptions _options;

    public RespConnection(ServerContext server, PipeReader reader, PipeWriter writer, RespSession session)
    {
        _server = server;
        _options = server.Options;
        _reader = reader;
        _writer = writer;
        _context = new CommandContext(server, new RespWriter(writer), session);
    }

    /// <summary>The connection's id (CLIENT ID).</summary>
    public long ClientId => _context.ClientId;

    /// <summary>Serves the connection until the client closes it, QUIT, a protocol error or <paramref name="stopping"/>.</summary>
    public async Task RunAsync(CancellationToken stopping)
    {
        long buffered = 0;
        // One registration for the connection's life rather than one per read and flush: stopping cancels the pending
        // read (or the flush to a client that does not read), which ends the loop.
        using CancellationTokenRegistration stop = stopping.UnsafeRegister(static state =>
        {
            var connection = (RespConnection)state!;
            // Either call may run the connection to its end there and then (a pipe whose reader continues inline, on
            // the thread that cancels), completing both pipes; the other then finds its pipe disposed.
            try
            {
                connection._writer.CancelPendingFlush();
                connection._reader.CancelPendingRead();
            }
            catch (ObjectDisposedException)
            {
            }
        }, this);
        try
        {
            while (true)
            {
                ReadResult read = await _reader.ReadAsync(CancellationToken.None).ConfigureAwait(false);
                if (read.IsCanceled)
                {
                    return;
                }

                _context.DeferDeviceReads = _server.MayReadFromDevice;
                if (_context.DeferDeviceReads)
                {
                    // A GET that reads the device is finished below without holding a thread, but other commands
                    // complete their pending operation in place: off the socket's polling thread first, where inline
                    // completions would have run the batch, so that other connections are not held up meanwhile. A
                    // store whose log fits in memory never pays this hop.
                    await Task.Yield();
                }

                ReadOnlySequence<byte> buffer = read.Buffer;
                _server.Statistics.AddReceived(buffer.Length - buffered);
                bool close = false;
                while (true)
                {
                    BatchEnd end = RunBatch(ref buffer, read.IsCompleted, out RespCommand waiting, out byte[][]? args);
                    if (end == BatchEnd.AsyncCommand)
                    {
                        await CommandDispatcher.ExecuteAsync(_context, waiting, args!, stopping).ConfigureAwait(false);
                        continue;
                    }

                    if (end == BatchEnd.OutputFull)
                    {
                        await FlushAsync(stopping).ConfigureAwait(false);
                        continue;
                    }

                    if (end == BatchEnd.Deferred)
                    {
                        // The replies before it go out while the device reads; the session's own read is all that is
                        // pending, outside protection, and its reply follows them in order.
                        await FlushAsync(stopping).ConfigureAwait(false);
                        if (!await FinishDeferredAsync(waiting, stopping).ConfigureAwait(false))
                        {
                            close = true;
                            break;
                        }

                        continue;
                    }

                    close = end == BatchEnd.Close;
                    break;
                }

                if (_context.Durable && _context.LastWriteSerialNo > _context.DurableSerialNo)
                {
                    // Durable mode: the batch's replies wait until its writes are in a checkpoint, which connections
                    // waiting together share (the hosting package's group commit).
                    await DurabilityCommands.WaitDurableAsync(_context, stopping).ConfigureAwait(false);
                }

                await FlushAsync(stopping).ConfigureAwait(false);
                _reader.AdvanceTo(buffer.Start, buffer.End);
                buffered = buffer.Length;
                if (close || read.IsCompleted)
                {
                    break;
                }
            }
        }
        finally
        {
            // Out of protection whatever happened, before the connection awaits nothing more.
            _context.Unprotect();
        }
    }

    /// <summary>Disposes the connection's session.</summary>
    public void Dispose() => _context.Dispose();

    private enum BatchEnd
    {
        NeedMoreData,
        AsyncCommand,
        OutputFull,
        Deferred,
        Close,
    }

    /// <summary>Completes the deferred command's read and writes its reply; false (an error written) when it failed.</summary>
    private async ValueTask<bool> FinishDeferredAsync(RespCommand command, CancellationToken stopping)
    {
        try
        {
            await _context.Session.CompletePendingAsync(stopping).ConfigureAwait(false);
        }
        catch (Exception error) when (error is not (OperationCanceledException or OutOfMemoryException))
        {
            Failed(error);
            return false;
        }

        CommandDispatcher.FinishDeferred(_context, command);
        return true;
    }

    /// <summary>
    /// Runs whole commands from the start of <paramref name="buffer"/>, inside one epoch protection, until the buffer
    /// ends, a command must run asynchronously (returned in <paramref name="waiting"/> with copied arguments), a
    /// command's read was deferred (returned in <paramref name="waiting"/>; its reply is not written yet), the output is
    /// full, or the connection must close. <paramref name="buffer"/> is left at the first command not run.
    /// </summary>
    private BatchEnd RunBatch(ref ReadOnlySequence<byte> buffer, bool completed, out RespCommand waiting, out byte[][]? args)
    {
        waiting = RespCommand.Unknown;
        args = null;
        long commands = 0;
        try
        {
            while (!buffer.IsEmpty)
            {
                if (_writer.UnflushedBytes > _options.MaxPendingOutputBytes)
                {
                    return BatchEnd.OutputFull;
                }

                ReadOnlySpan<byte> span = buffer.FirstSpan;
                ParseStatus status = RespParser.TryParse(span, _arguments, _options.MaxArguments, _options.MaxBulkLength,
                    out int consumed, out string? error);
                if (status == ParseStatus.Incomplete && buffer.Length > span.Length)
                {
                    // The request continues in the next segment: parse a contiguous copy (bounded by the request limit).
                    span = Contiguous(buffer);
                    status = RespParser.TryParse(span, _arguments, _options.MaxArguments, _options.MaxBulkLength,
                        out consumed, out error);
                }

                if (status == ParseStatus.Incomplete)
                {
                    if (buffer.Length > _options.MaxRequestBytes)
                    {
                        return Reject("ERR Protocol error: request larger than the server allows");
                    }

                    return completed ? Reject("ERR Protocol error: unexpected end of the request") : BatchEnd.NeedMoreData;
                }

                if (status == ParseStatus.Malformed)
                {
                    return Reject(error!);
                }

                var frame = new CommandFrame(span, _arguments);
                buffer = buffer.Slice(consumed);
                if (frame.Count == 0)
                {
                    continue;
                }

                commands++;
                RespCommand command = CommandNames.Find(frame[0]);
                if (!CommandDispatcher.CanRun(_context, command, frame))
                {
                    continue;
                }

                if (CommandDispatcher.RunsAsynchronously(command))
                {
                    waiting = command;
                    args = frame.ToArrays();
                    return BatchEnd.AsyncCommand;
                }

                if (commands > 1)
                {
                    // From the second command of the batch on: a lone command protects itself as cheaply.
                    _context.Protect();
                }

                CommandOutcome outcome = Run(command, frame);
                if (outcome == CommandOutcome.Close)
                {
                    return BatchEnd.Close;
                }

                if (outcome == CommandOutcome.Deferred)
                {
                    waiting = command;
                    return BatchEnd.Deferred;
                }
            }

            return BatchEnd.NeedMoreData;
        }
        finally
        {
            _context.Unprotect();
            _server.Statistics.AddCommands(commands);
        }
    }

    private CommandOutcome Run(RespCommand command, CommandFrame frame)
    {
        try
        {
            return CommandDispatcher.Execute(_context, command, frame);
        }
        catch (ArgumentOutOfRangeException)
        {
            // The store refuses a record larger than a page before it changes anything.
            _context.Writer.WriteError("ERR the key and value are too large for the store's log pages");
            return CommandOutcome.Done;
        }
        catch (Exception error) when (error is not OutOfMemoryException)
        {
            Failed(error);
            return CommandOutcome.Close;
        }
    }

    /// <summary>A command failed in the store or a callback: logged, and told to the client before the connection
    /// closes.</summary>
    private void Failed(Exception error)
    {
        ServerLog.CommandFailed(_server.Logger, _context.ClientId, error);
        _context.Writer.WriteError($"ERR internal error ({error.GetType().Name}); closing the connection");
    }

    private BatchEnd Reject(string error)
    {
        ServerLog.ProtocolError(_server.Logger, _context.ClientId, error);
        _context.Writer.WriteError(error);
        return BatchEnd.Close;
    }

    private ReadOnlySpan<byte> Contiguous(ReadOnlySequence<byte> buffer)
    {
        int length = (int)Math.Min(buffer.Length, _options.MaxRequestBytes);
        if (_contiguous.Length < length)
        {
            _contiguous = new byte[Math.Max(length, _contiguous.Length * 2)];
        }

        buffer.Slice(0, length).CopyTo(_contiguous);
        return _contiguous.AsSpan(0, length);
    }

    private async ValueTask FlushAsync(CancellationToken stopping)
    {
        long pending = _writer.UnflushedBytes;
        if (pending == 0)
        {
            return;
        }

        _server.Statistics.AddSent(pending);
        FlushResult flushed = await _writer.FlushAsync(CancellationToken.None).ConfigureAwait(false);
        if (flushed.IsCanceled)
        {
            stopping.ThrowIfCancellationRequested();
        }
    }
}
