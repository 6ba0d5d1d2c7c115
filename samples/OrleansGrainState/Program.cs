using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using OrleansGrainState;

// A one-silo Orleans service whose grain keeps its state in HybridKV: every run adds one visit to each of three
// visitors and prints their totals, which keep growing from run to run. Arguments: [directory] [silo port] [gateway port].
string directory = args.Length > 0 ? args[0] : "grain-data";
int siloPort = args.Length > 1 ? int.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 11111;
int gatewayPort = args.Length > 2 ? int.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture) : 30000;

HostApplicationBuilder builder = Host.CreateApplicationBuilder();
builder.Logging.SetMinimumLevel(LogLevel.Error);
builder.UseOrleans(silo => silo
    .UseLocalhostClustering(siloPort, gatewayPort)
    .AddHybridKVGrainStorage("visits", options => options.Directory = directory));
using IHost host = builder.Build();
await host.StartAsync();

IGrainFactory grains = host.Services.GetRequiredService<IGrainFactory>();
foreach (string visitor in new[] { "ada", "grace", "edsger" })
{
    // Returns once the new count is durable: a checkpoint shared with the other grains' writes holds it.
    long visits = await grains.GetGrain<IVisitorGrain>(visitor).VisitAsync();
    Console.WriteLine($"{visitor}: {visits} visits");
}

// Stopping the silo deactivates the grains and takes the store's final checkpoint.
await host.StopAsync();
