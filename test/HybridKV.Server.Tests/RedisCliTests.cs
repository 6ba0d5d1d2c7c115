using System.Diagnostics;
using HybridKV.Server.Tests.Support;

namespace HybridKV.Server.Tests;

/// <summary>
/// redis-cli against the server. redis-cli comes from the Debian package redis-tools, which <c>.ci/run</c> installs;
/// without it this test fails and says so (it is never skipped), see the README's "A Redis-protocol server".
/// </summary>
[Trait("Category", "Server")]
public sealed class RedisCliTests : IClassFixture<ServerFixture>
{
    private readonly ServerFixture _fixture;

    public RedisCliTests(ServerFixture fixture) => _fixture = fixture;

    [Fact]
    public async Task Redis_cli_runs_a_session_against_the_server()
    {
        string port = _fixture.Server.Port.ToString(System.Globalization.CultureInfo.InvariantCulture);
        string output = await RunAsync(["-p", port],
            "PING\nSET cli:greeting hello\nGET cli:greeting\nINCR cli:n\nINCRBY cli:n 41\nAPPEND cli:greeting \" world\"\n" +
            "GET cli:greeting\nEXPIRE cli:greeting 100\nPERSIST cli:greeting\nTTL cli:greeting\nDEL cli:n\nEXISTS cli:n\nNOSUCH x\n" +
            "DBSIZE\n");
        Assert.Equal(
            ["PONG", "OK", "hello", "1", "42", "11", "hello world", "1", "1", "-1", "1", "0",
                "ERR unknown command 'NOSUCH', with args beginning with: 'x' ", "1"],
            output.Split('\n', StringSplitOptions.RemoveEmptyEntries));

        string info = await RunAsync(["-p", port, "INFO", "server"], "");
        Assert.Contains("redis_version:7.2.0", info, StringComparison.Ordinal);
        string resp3 = await RunAsync(["-3", "--no-raw", "-p", port, "GET", "cli:missing"], "");
        Assert.Equal("(nil)", resp3.Trim());
    }

    private static async Task<string> RunAsync(string[] arguments, string input)
    {
        var start = new ProcessStartInfo("redis-cli")
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        Process process;
        try
        {
            process = Process.Start(start)!;
        }
        catch (System.ComponentModel.Win32Exception error)
        {
            Assert.Fail("redis-cli is not installed: install the Debian package redis-tools (.ci/run does), see the " +
                $"README's \"A Redis-protocol server\" ({error.Message}).");
            throw;
        }

        using (process)
        {
            await process.StandardInput.WriteAsync(input);
            process.StandardInput.Close();
            Task<string> output = process.StandardOutput.ReadToEndAsync();
            Task<string> errors = process.StandardError.ReadToEndAsync();
            await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(30));
            Assert.True(process.ExitCode == 0, $"redis-cli exited with {process.ExitCode}: {await errors}");
            return await output;
        }
    }
}
