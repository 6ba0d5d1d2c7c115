using HybridKV.Azure.Tests.Support;
using HybridKV.Tests.Support;

namespace HybridKV.Azure.Tests.Crash;

/// <summary>
/// A writer process (the core crash helper's CPR workload, with its log on page blobs and checkpoints in Azurite) is
/// killed with SIGKILL while it runs RMWs with checkpoints every few tens of milliseconds; another process waits for
/// the dead one's lease to expire, recovers, and checks every counter against the recovered commit points and against
/// every commit the killed process was told was durable.
/// </summary>
[Trait("Category", "Azure")]
public sealed class KilledWriterTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("hybridkv-azure-crash-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task A_writer_killed_with_SIGKILL_is_recovered_by_another_process_with_every_sessions_exact_prefix()
    {
        Azurite azurite = await Azurite.Instance;
        string container = Azurite.NewContainerName();
        var environment = new Dictionary<string, string> { ["HYBRIDKV_AZURE_CONNECTION"] = azurite.ConnectionString };
        TimeSpan timeout = TimeSpan.FromSeconds(90);

        using (var writer = CrashHelperProcess.StartHelper("HybridKV.Azure.CrashHelper.dll", environment,
                   "run", _directory, container, "1"))
        {
            await writer.WaitForLineAsync("running", timeout);
            await writer.WaitForLineAsync("committed", timeout);
            writer.Kill();
            Assert.True(writer.ExitCode is null, $"The writer exited by itself:{Environment.NewLine}{writer.Output}");
        }

        string commits = Path.Combine(_directory, "commits.log");
        Assert.True(File.Exists(commits) && File.ReadAllLines(commits).Length > 0, "no commit was reported before the kill");

        // The killed writer's lease is still there: the verifier waits for it to expire (15 s), then takes the blobs over.
        using var verifier = CrashHelperProcess.StartHelper("HybridKV.Azure.CrashHelper.dll", environment,
            "verify", _directory, container);
        int exitCode = await verifier.WaitForExitAsync(timeout);
        Assert.True(exitCode == 0, $"The recovery failed ({exitCode}):{Environment.NewLine}{verifier.Output}");
        Assert.Contains("verified version", verifier.Output, StringComparison.Ordinal);
    }
}
