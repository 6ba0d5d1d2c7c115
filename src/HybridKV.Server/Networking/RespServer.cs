using System.Collections.Concurrent;
using System.IO.Pipelines;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using HybridKV.Extensions.Hosting;
using HybridKV.Server.Commands;
using HybridKV.Server.Hosting;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace HybridKV.Server.Networking;

/// <summary>
/// The hosted service that listens: started after the store is recovered (the hosting package opens it before any
/// hosted service starts), it accepts connections on sockets, gives each a session of its own and a pair of pipes,
/// and on stop closes the listener and every connection, so that their sessions are disposed before the store takes
/// its final checkpoint.
/// </summary>
internal sealed class RespServer : IHostedService, IDisposable
{
    // Large enough that a pipelined batch of small commands arrives in one segment, and is parsed in place.
    private const int ReceiveBufferSize = 64 * 1024;

    private readonly HybridKVStoreHost<RespStore, RespSession> _host;
    private readonly HybridKVSessionPool<RespStore, RespSession> _pool;
    private readonly RespServerOptions _options;
    private readonly ILogger _logger;
    private readonly ServerStatistics _statistics;
    private readonly CancellationTokenSource _stopping = new();
    private readonly ConcurrentDictionary<long, Task> _connections = new();

    // The open connections' sockets (or their EpollSocket, which also ends the connection's pending read): closed by
    // force if a connection does not end within the host's stop timeout.
    private readonly ConcurrentDictionary<long, IDisposable> _sockets = new();
    private Socket? _listener;
    private EpollLoop[]? _loops;
    private Task _accepting = Task.CompletedTask;
    private X509Certificate2? _certificate;
    private long _nextConnection;

    public RespServer(HybridKVStoreHost<RespStore, RespSession> host, HybridKVSessionPool<RespStore, RespSession> pool,
        IOptions<RespServerOptions> options, ILoggerFactory loggerFactory, ServerStatistics statistics,
        ServerMetrics metrics)
    {
        // The meters observe the statistics; taking them here creates them with the server.
        _ = metrics;
        _host = host;
        _pool = pool;
        _options = options.Value;
        _logger = loggerFactory.CreateLogger("HybridKV.Server");
        _statistics = statistics;
    }

    /// <summary>What the connections share; null until the server listens.</summary>
    public ServerContext? Context { get; private set; }

    /// <summary>The port the server listens on (the bound one when configured as 0); 0 before it listens.</summary>
    public int Port => Context?.Port ?? 0;

    /// <inheritdoc/>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        var context = new ServerContext(_pool.Store, _host.Commits!, _options, _statistics, _logger, _host.Recovery);
        if (_options.TlsCertificatePath is { } path)
        {
            _certificate = X509CertificateLoader.LoadPkcs12FromFile(path, _options.TlsCertificatePassword);
        }

        var endpoint = new IPEndPoint(IPAddress.Parse(_options.BindAddress), _options.Port);
        var listener = new Socket(endpoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            listener.Bind(endpoint);
            listener.Listen(512);
        }
        catch
        {
            listener.Dispose();
            throw;
        }

        if (Epoll.IsSupported && _certificate is null)
        {
            // Plain connections on Linux: received by the server's own loops (EpollLoop says why). Not one per core:
            // a loop also runs in the kernel for every system call, and a client or peer on the same machine needs a
            // core too (two loops on two cores served fewer requests than one, bench/README.md).
            _loops = [.. Enumerable.Range(0, _options.IoThreadsFor(Environment.ProcessorCount))
                .Select(i => new EpollLoop($"HybridKV RESP {i}", TimeSpan.FromMicroseconds(_options.BusyPollMicroseconds)))];
        }

        _listener = listener;
        context.Port = ((IPEndPoint)listener.LocalEndPoint!).Port;
        Context = context;
        ServerLog.Listening(_logger, _options.BindAddress, context.Port, _certificate is not null, _options.RequirePass is not null);
        _accepting = AcceptAsync(listener, context, _stopping.Token);
        return Task.CompletedTask;
    }

    /// <inheritdoc/>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await _stopping.CancelAsync().ConfigureAwait(false);
        _listener?.Dispose();
        await _accepting.ConfigureAwait(false);
        int open = _connections.Count;
        Task closed = Task.WhenAll(_connections.Values);
        try
        {
            await closed.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // A connection that did not end when asked (blocked on a client): its socket is closed under it, so that
            // its session is disposed before the store takes its final checkpoint.
            foreach (IDisposable socket in _sockets.Values)
            {
                socket.Dispose();
            }

            await closed.WaitAsync(TimeSpan.FromSeconds(5), CancellationToken.None).ConfigureAwait(false);
        }

        StopLoops();
        ServerLog.Stopped(_logger, open);
    }

    private async Task AcceptAsync(Socket listener, ServerContext context, CancellationToken stopping)
    {
        while (!stopping.IsCancellationRequested)
        {
            Socket socket;
            try
            {
                socket = await listener.AcceptAsync(stopping).ConfigureAwait(false);
            }
            catch (Exception error) when (error is OperationCanceledException or ObjectDisposedException or SocketException)
            {
                if (stopping.IsCancellationRequested)
                {
                    return;
                }

                continue;
            }

            if (!_statistics.TryOpen(_options.MaxConnections))
            {
                ServerLog.ConnectionRefused(_logger, socket.RemoteEndPoint?.ToString(), _options.MaxConnections);
                Refuse(socket, "-ERR max number of clients reached\r\n"u8);
                continue;
            }

            long id = Interlocked.Increment(ref _nextConnection);
            _sockets[id] = socket;
            _connections[id] = ServeAsync(socket, context, id, stopping);
        }
    }

    private async Task ServeAsync(Socket socket, ServerContext context, long id, CancellationToken stopping)
    {
        // Off the accept loop at once: the TLS handshake and the first read must not delay the next accept.
        await Task.Yield();
        string? remote = socket.RemoteEndPoint?.ToString();
        EpollSocket? polled = null;
        Stream stream;
        try
        {
            socket.NoDelay = true;
            polled = _loops is { } loops ? new EpollSocket(loops[id % loops.Length], socket, _options.MaxRequestBytes) : null;
            if (polled is not null)
            {
                _sockets[id] = polled;
            }
        }
        catch (Exception error) when (error is SocketException or ObjectDisposedException)
        {
            // The client left before it was served.
            socket.Dispose();
            Forget(id);
            return;
        }

        stream = polled?.Output ?? new NetworkStream(socket, ownsSocket: true);
        try
        {
            if (_certificate is not null)
            {
                var tls = new SslStream(stream, leaveInnerStreamOpen: false);
                stream = tls;
                try
                {
                    await tls.AuthenticateAsServerAsync(
                        new SslServerAuthenticationOptions { ServerCertificate = _certificate }, stopping).ConfigureAwait(false);
                }
                catch (Exception error) when (error is IOException or System.Security.Authentication.AuthenticationException)
                {
                    ServerLog.TlsFailed(_logger, remote, error);
                    return;
                }
            }

            RespSession session;
            try
            {
                session = context.Store.NewSession(Guid.NewGuid());
            }
            catch (InvalidOperationException)
            {
                ServerLog.NoSession(_logger, remote);
                await stream.WriteAsync("-ERR the store has no free session\r\n"u8.ToArray(), stopping).ConfigureAwait(false);
                return;
            }

            PipeReader reader = polled?.Input ?? PipeReader.Create(stream,
                new StreamPipeReaderOptions(bufferSize: ReceiveBufferSize, minimumReadSize: 4096, leaveOpen: true));
            PipeWriter writer = PipeWriter.Create(stream, new StreamPipeWriterOptions(minimumBufferSize: 16 * 1024, leaveOpen: true));
            using var connection = new RespConnection(context, reader, writer, session);
            try
            {
                await connection.RunAsync(stopping).ConfigureAwait(false);
            }
            catch (Exception error) when (IsDisconnect(error, stopping))
            {
                // The client went away, or the server is stopping: nothing to report.
            }
            catch (Exception error)
            {
                ServerLog.ConnectionFailed(_logger, connection.ClientId, error);
            }
            finally
            {
                await reader.CompleteAsync().ConfigureAwait(false);
                await writer.CompleteAsync().ConfigureAwait(false);
            }
        }
        catch (Exception error) when (IsDisconnect(error, stopping))
        {
        }
        finally
        {
            await stream.DisposeAsync().ConfigureAwait(false);
            Forget(id);
        }
    }

    /// <summary>A connection's end, counted, and its socket and task no longer tracked.</summary>
    private void Forget(long id)
    {
        _statistics.Closed();
        _sockets.TryRemove(id, out _);
        _connections.TryRemove(id, out _);
    }

    private static bool IsDisconnect(Exception error, CancellationToken stopping) =>
        error is IOException or SocketException or ObjectDisposedException ||
        (error is OperationCanceledException && stopping.IsCancellationRequested);

    private static void Refuse(Socket socket, ReadOnlySpan<byte> reply)
    {
        try
        {
            socket.Send(reply, SocketFlags.None);
        }
        catch (SocketException)
        {
        }
        finally
        {
            socket.Dispose();
        }
    }

    private void StopLoops()
    {
        EpollLoop[]? loops = Interlocked.Exchange(ref _loops, null);
        foreach (EpollLoop loop in loops ?? [])
        {
            loop.Dispose();
        }
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        StopLoops();
        _stopping.Dispose();
        _listener?.Dispose();
        _certificate?.Dispose();
    }
}
