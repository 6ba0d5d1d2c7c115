using System.Diagnostics;
using System.Net;
using System.Net.Sockets;

namespace HybridKV.Orleans.Tests;

/// <summary>The sample samples/OrleansGrainState, run twice as a process: the second run continues the first's counts.</summary>
[Trait("Category", "Orleans")]
public sealed class SampleTests : IDisposable
{
    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task The_grain_state_sample_keeps_its_counts_across_runs()
    {
        string first = await RunSampleAsync();
        Assert.Contains("ada: 1 visits", first, StringComparison.Ordinal);
        string second = await RunSampleAsync();
        Assert.Contains("ada: 2 visits", second, StringComparison.Ordinal);
        Assert.Contains("edsger: 2 visits", second, StringComparison.Ordinal);
    }

    private async Task<string> RunSampleAsync()
    {
        var start = new ProcessStartInfo("dotnet")
        {
            WorkingDirectory = _directory.Path,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "OrleansGrainState.dll"));
        start.ArgumentList.Add(Path.Combine(_directory.Path, "data"));
        start.ArgumentList.Add(FreePort().ToString(System.Globalization.CultureInfo.InvariantCulture));
        start.ArgumentList.Add(FreePort().ToString(System.Globalization.CultureInfo.InvariantCulture));
        using var process = Process.Start(start)!;
        Task<string> output = process.StandardOutput.ReadToEndAsync();
        Task<string> errors = process.StandardError.ReadToEndAsync();
        using var deadline = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        await process.WaitForExitAsync(deadline.Token);
        Assert.True(process.ExitCode == 0, $"exit code {process.ExitCode}: {await errors}");
        return await output;
    }

    private static int FreePort()
    {
        using var probe = new TcpListener(IPAddress.Loopback, 0);
        probe.Start();
        return ((IPEndPoint)probe.LocalEndpoint).Port;
    }
}
