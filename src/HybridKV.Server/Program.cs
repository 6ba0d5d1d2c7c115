using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

// dotnet run --project src/HybridKV.Server -- --port 6379 --dir ./data
// Every option is also a configuration key (appsettings.json, environment variables such as
// HybridKV__Server__RequirePass, which keeps a password off the command line).
HostApplicationBuilder builder = Host.CreateApplicationBuilder(args);
builder.Configuration.AddCommandLine(args, new Dictionary<string, string>
{
    ["--port"] = "HybridKV:Server:Port",
    ["--bind"] = "HybridKV:Server:BindAddress",
    ["--requirepass"] = "HybridKV:Server:RequirePass",
    ["--durable"] = "HybridKV:Server:DurableWrites",
    ["--maxclients"] = "HybridKV:Server:MaxConnections",
    ["--tls-cert"] = "HybridKV:Server:TlsCertificatePath",
    ["--dir"] = "HybridKV:Directory",
    ["--memory"] = "HybridKV:MemorySizeBytes",
    ["--checkpoint-interval"] = "HybridKV:CheckpointInterval",
});
builder.Services.AddHybridKVServer(configureStore: options => options.Directory ??= "hybridkv-data");
builder.Services.AddHealthChecks().AddHybridKVServer();
await builder.Build().RunAsync().ConfigureAwait(false);
