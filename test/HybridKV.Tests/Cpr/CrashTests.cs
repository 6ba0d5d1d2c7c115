using HybridKV.Tests.Support;

namespace HybridKV.Tests.Cpr;

/// <summary>
/// Real crashes: a separate process (HybridKV.CrashHelper) runs RMWs from three sessions with a checkpoint every few
/// tens of milliseconds, journaling every commit point it is told about; the test kills it with SIGKILL at random
/// moments, sometimes while it is still recovering from the previous kill. Each new process recovers and checks,
/// before doing anything else, that every counter holds exactly the operations up to the recovered commit points
/// (and that nothing it was told was durable is missing); a last process does only that check.
/// </summary>
[Trait("Category", "Crash")]
[Collection(nameof(ProcessWideTests))]
public sealed class CrashTests : IDisposable
{
    private static readonly TimeSpan StartupTimeout = TimeSpan.FromSeconds(60);

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    /// <summary>With compaction by policy running too (issue 18): some kills land while it copies or moves the begin
    /// address.</summary>
    [Fact]
    [Trait("Category", "Lifecycle")]
    public async Task Killed_with_SIGKILL_again_and_again_the_store_recovers_every_sessions_exact_prefix()
    {
        IReadOnlyList<string> outputs = await KillAgainAndAgainAsync(
            kills: 20 * TestScale.Factor, run: "run", verify: "verify", everyThirdRunWaitsFor: "compacted");
        Assert.True(outputs.Count(o => o.Contains("compacted", StringComparison.Ordinal)) >= 2,
            $"fewer than two runs compacted the log before they were killed:{Environment.NewLine}" +
            string.Join(Environment.NewLine, outputs));
    }

    /// <summary>The same with byte-sequence keys and values of 0 to 600 bytes, upserted in place and at the tail.</summary>
    [Fact]
    [Trait("Category", "VarLen")]
    public Task Killed_with_SIGKILL_a_store_of_variable_length_values_recovers_every_sessions_exact_prefix() =>
        KillAgainAndAgainAsync(kills: 10 * TestScale.Factor, run: "run-varlen", verify: "verify-varlen");

    /// <summary>The same with RMWs, upserts and deletes piling up on a few cold keys per session (issue 24).</summary>
    [Fact]
    [Trait("Category", "PendingOrder")]
    public Task Killed_with_SIGKILL_a_store_whose_operations_pile_up_on_cold_keys_recovers_them_in_issue_order() =>
        KillAgainAndAgainAsync(kills: 10 * TestScale.Factor, run: "run-hot", verify: "verify-hot");

    /// <param name="everyThirdRunWaitsFor">A line every third run prints before it is killed (after it, as before).</param>
    private async Task<IReadOnlyList<string>> KillAgainAndAgainAsync(
        int kills, string run, string verify, string? everyThirdRunWaitsFor = null)
    {
        string directory = _directory.NewSubdirectory();
        var random = new Random(20261121);
        int verified = 0;
        int killedWhileRecovering = 0;
        var outputs = new List<string>();
        for (int attempt = 0; attempt < kills; attempt++)
        {
            using var helper = CrashHelperProcess.Start(run, directory, attempt.ToString(System.Globalization.CultureInfo.InvariantCulture));
            bool duringRecovery = random.Next(4) == 0;
            if (duringRecovery)
            {
                // Somewhere in process start-up or recovery (which replays the log and writes pages back).
                await helper.WaitForLineAsync("recovering", StartupTimeout);
                await Task.Delay(random.Next(0, 40));
            }
            else
            {
                await helper.WaitForLineAsync("running", StartupTimeout);
                verified++;
                if (everyThirdRunWaitsFor is not null && attempt % 3 == 1)
                {
                    await helper.WaitForLineAsync(everyThirdRunWaitsFor, StartupTimeout);
                }
                else if (random.Next(3) != 0)
                {
                    // Mostly after the first commit of this run, so that later kills land in and between checkpoints
                    // (a fresh process's first checkpoint is slow: everything in it is compiled on first use).
                    await helper.WaitForLineAsync("committed", StartupTimeout);
                }

                await Task.Delay(random.Next(0, 300));
            }

            bool wasRecovering = !helper.HasSeen("running");
            helper.Kill();
            outputs.Add($"run {attempt}: {helper.Output}");
            Assert.True(helper.ExitCode is null or 137 or -1,
                $"Run {attempt} exited by itself ({helper.ExitCode}) before it was killed:{Environment.NewLine}{helper.Output}");
            if (wasRecovering)
            {
                killedWhileRecovering++;
            }
        }

        using var final = CrashHelperProcess.Start(verify, directory);
        int exitCode = await final.WaitForExitAsync(StartupTimeout);
        Assert.True(exitCode == 0, $"The final recovery failed ({exitCode}):{Environment.NewLine}{final.Output}");
        Assert.Contains("verified", final.Output, StringComparison.Ordinal);
        Assert.True(verified >= kills / 2, $"only {verified} of {kills} runs got past recovery");
        Assert.True(killedWhileRecovering > 0, "no run was killed during recovery");
        string commits = Path.Combine(directory, "commits.log");
        Assert.True(File.Exists(commits) && File.ReadAllLines(commits).Length > kills,
            $"too few commits were reported for the kills to have hit checkpoints:{Environment.NewLine}" +
            string.Join(Environment.NewLine, outputs));
        return outputs;
    }
}
