using HybridKV.Epochs;

namespace HybridKV.Tests.Hardening;

/// <summary>
/// A bumped epoch's action runs even when the last protected participant leaves at the moment it is published and no
/// one is active afterwards (issue 16, item 9): an idle service must still finish its checkpoint.
/// </summary>
[Trait("Category", "Hardening")]
public sealed class EpochWakeupTests
{
    [Fact]
    public void An_action_bumped_while_the_only_participant_leaves_runs_without_later_activity()
    {
        using var epoch = new LightEpoch(4);
        Assert.True(epoch.TryAcquireEntry(out int entry));
        int rounds = 20_000 * Support.TestScale.Factor;
        int stranded = 0;
        using var go = new Barrier(2);
        for (int round = 0; round < rounds; round++)
        {
            int ran = 0;
            epoch.Protect(entry);
            var leaver = new Thread(() =>
            {
                go.SignalAndWait();
                epoch.Unprotect(entry);
            });
            leaver.Start();
            go.SignalAndWait();
            epoch.BumpCurrentEpoch(() => Interlocked.Exchange(ref ran, 1));
            leaver.Join();

            // Nobody is protected and nobody will act again: the action must have run by now.
            if (Volatile.Read(ref ran) == 0)
            {
                stranded++;
                epoch.Protect(entry);
                epoch.Unprotect(entry);
            }
        }

        Assert.Equal(0, stranded);
        Assert.Equal(0, epoch.PendingActionCount);
    }
}
