using CountStore;
using HybridKV.CrashHelper;
using Microsoft.Extensions.Logging;

namespace HybridKV.Azure.CrashHelper;

/// <summary>
/// <c>run DIR CONTAINER SEED</c> / <c>verify DIR CONTAINER</c>: the core crash helper's count workload (recover, check
/// every key against the recovered commit points and the commits journaled in DIR, then RMWs with periodic
/// checkpoints until killed), with the log on an <see cref="AzurePageBlobDevice"/> and checkpoints in an
/// <see cref="AzureCheckpointStore"/> in CONTAINER. The connection string comes from the environment variable
/// <c>HYBRIDKV_AZURE_CONNECTION</c>, not the command line, which other users of the machine can read.
/// </summary>
internal static class AzureProgram
{
    private static async Task<int> Main(string[] args)
    {
        if (args.Length < 3 || args[0] is not ("run" or "verify"))
        {
            await Console.Error.WriteLineAsync("usage: run DIR CONTAINER SEED | verify DIR CONTAINER");
            return 2;
        }

        string? connectionString = Environment.GetEnvironmentVariable("HYBRIDKV_AZURE_CONNECTION");
        if (string.IsNullOrEmpty(connectionString))
        {
            await Console.Error.WriteLineAsync("HYBRIDKV_AZURE_CONNECTION is not set");
            return 2;
        }

        bool running = args[0] == "run";
        string directory = args[1];
        string container = args[2];
        int seed = args.Length > 3 ? int.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture) : 0;
        var journal = new Journal(directory);
        using var loggerFactory = new LoggerFactory([new StderrLoggerProvider()]);

        // The shortest lease the service allows, so that the next process waits at most 15 s for a killed one's.
        var lease = new AzureLeaseOptions { Duration = TimeSpan.FromSeconds(15), AcquireTimeout = TimeSpan.FromSeconds(60) };
        Console.WriteLine("opening");
        await using AzurePageBlobDevice device = await AzurePageBlobDevice.OpenAsync(connectionString, container,
            new AzurePageBlobDeviceOptions { SegmentSize = 1L << 20, Lease = lease }, loggerFactory);
        await using AzureCheckpointStore checkpoints = await AzureCheckpointStore.OpenAsync(connectionString, container,
            new AzureCheckpointStoreOptions { Lease = lease }, loggerFactory);
        StoreSettings settings = Program.Settings(directory, running, seed, loggerFactory) with
        {
            LogDirectory = null,
            LogDevice = device,
            CheckpointStore = checkpoints,
        };

        using var store = new Counts.Store(settings);
        return await Program.RecoverCheckAndRunAsync(
            () => store.RecoverAsync(), recovered => Program.VerifyAsync(store, journal, recovered),
            s => Program.RunSession(store, journal, s), journal, running);
    }
}
