using System.Net;
using HybridKV.Server.Hosting;
using HybridKV.Server.Networking;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Transport.Sockets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace HybridKV.Benchmarks.Server;

/// <summary>
/// <c>server-kestrel-host --port P --dir D</c>: the same server (store, dispatcher, connection loop) with Kestrel's
/// socket transport and a connection handler in place of the server's own sockets and stream pipes, so that the
/// benchmark measures the transport choice of issue 23 (<c>--servers hybridkv,hybridkv-kestrel</c>).
/// </summary>
internal static class KestrelRespHost
{
    public static int Run(string[] args)
    {
        int port = int.Parse(CommandLine.Option(args, "--port") ?? "6379", System.Globalization.CultureInfo.InvariantCulture);
        string directory = CommandLine.Option(args, "--dir") ?? "hybridkv-kestrel-data";
        WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        // As the server's own program: the index sized for the benchmark's keys, 2 GiB of log, no checkpoint during
        // the run; its socket listener takes a port nobody uses.
        builder.Services.AddHybridKVServer(null, null,
            store =>
            {
                store.Directory = directory;
                store.MemorySizeBytes = 2L << 30;
                store.IndexBuckets = 1L << 21;
                store.CheckpointInterval = store.IndexCheckpointInterval = TimeSpan.FromHours(1);
            },
            server => server.Port = 0);
        // Inline scheduling, as the server's program runs its sockets inline.
        builder.Services.Configure<SocketTransportOptions>(options => options.UnsafePreferInlineScheduling = true);
        builder.WebHost.ConfigureKestrel(kestrel =>
            kestrel.Listen(IPAddress.Loopback, port, listen => listen.UseConnectionHandler<KestrelRespConnectionHandler>()));
        using WebApplication app = builder.Build();
        app.Run();
        return 0;
    }
}

/// <summary>One Kestrel connection served by the server's connection loop over Kestrel's pipes.</summary>
internal sealed class KestrelRespConnectionHandler : ConnectionHandler
{
    private readonly RespServer _server;

    public KestrelRespConnectionHandler(RespServer server) => _server = server;

    public override async Task OnConnectedAsync(ConnectionContext connection)
    {
        var context = _server.Context!;
        RespSession session = context.Store.NewSession(Guid.NewGuid());
        using var served = new RespConnection(context, connection.Transport.Input, connection.Transport.Output, session);
        try
        {
            await served.RunAsync(connection.ConnectionClosed);
        }
        catch (Exception error) when (error is IOException or OperationCanceledException or ConnectionResetException)
        {
        }
    }
}
