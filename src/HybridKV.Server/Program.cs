using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

// dotnet run --project src/HybridKV.Server -- --port 6379 --dir ./data
// Every option is also a configuration key (appsettings.json, environment variables such as
// HybridKV__Server__RequirePass, which keeps a password off the command line).
// Socket completions run the connection's loop on the thread that polled the socket, instead of queueing it to the
// thread pool: a hop fewer per batch of commands (measured: about a fifth more requests per second at pipeline 16).
// (TLS connections, and systems other than Linux; plain connections on Linux use the server's own epoll loops.)
// Read by the runtime when the first socket is created, so set here first; an explicit setting wins. Connections
// move to the thread pool before a batch that may block on the device (see RespConnection).
if (Environment.GetEnvironmentVariable("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS") is null)
{
    Environment.SetEnvironmentVariable("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS", "1");
}

HostApplicationBuilder builder = Host.CreateApplicationBuilder(args);
builder.Configuration.AddCommandLine(args, new Dictionary<string, string>
{
    ["--port"] = "HybridKV:Server:Port",
    ["--bind"] = "HybridKV:Server:BindAddress",
    ["--requirepass"] = "HybridKV:Server:RequirePass",
    ["--durable"] = "HybridKV:Server:DurableWrites",
    ["--maxclients"] = "HybridKV:Server:MaxConnections",
    ["--tls-cert"] = "HybridKV:Server:TlsCertificatePath",
    ["--io-threads"] = "HybridKV:Server:IoThreads",
    ["--busy-poll-us"] = "HybridKV:Server:BusyPollMicroseconds",
    ["--dir"] = "HybridKV:Directory",
    ["--memory"] = "HybridKV:MemorySizeBytes",
    ["--checkpoint-interval"] = "HybridKV:CheckpointInterval",
});
builder.Services.AddHybridKVServer(configureStore: options => options.Directory ??= "hybridkv-data");
builder.Services.AddHealthChecks().AddHybridKVServer();
await builder.Build().RunAsync().ConfigureAwait(false);
