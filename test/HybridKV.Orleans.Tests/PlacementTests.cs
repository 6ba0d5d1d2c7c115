using Orleans;
using Orleans.TestingHost;

namespace HybridKV.Orleans.Tests;

/// <summary>
/// Two silos, each with its own store: grains placed by <see cref="HybridKVPlacement"/> go back to the silo that holds
/// their state when they are reactivated or their silo restarts, and are not activated elsewhere while it is down.
/// </summary>
[Trait("Category", "Orleans")]
public sealed class PlacementTests : IDisposable
{
    private const int Grains = 20;

    private readonly TempDirectory _directory = new();

    public void Dispose() => _directory.Dispose();

    [Fact]
    public async Task Grains_return_to_the_silo_holding_their_state_after_deactivation_and_a_silo_restart()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 2, placement: true);
        await using (cluster)
        {
            var homes = new Dictionary<int, string>();
            for (int i = 0; i < Grains; i++)
            {
                IPinnedCounterGrain grain = cluster.GrainFactory.GetGrain<IPinnedCounterGrain>($"p{i}");
                await grain.AddAsync(i + 1);
                homes[i] = await grain.GetSiloAsync();
            }

            Assert.Equal(2, homes.Values.Distinct().Count());
            for (int i = 0; i < Grains; i++)
            {
                await cluster.GrainFactory.GetGrain<IPinnedCounterGrain>($"p{i}").DeactivateAsync();
            }

            SiloHandle secondary = cluster.SecondarySilos[0];
            await cluster.RestartSiloAsync(secondary);
            for (int i = 0; i < Grains; i++)
            {
                IPinnedCounterGrain grain = cluster.GrainFactory.GetGrain<IPinnedCounterGrain>($"p{i}");
                Assert.Equal(i + 1, await grain.GetAsync());
                Assert.Equal(homes[i], await grain.GetSiloAsync());
            }
        }
    }

    [Fact]
    public async Task A_grain_whose_silo_is_down_is_not_started_elsewhere_from_an_empty_state()
    {
        TestCluster cluster = await Clusters.DeployAsync(_directory.Path, silos: 2, placement: true);
        await using (cluster)
        {
            SiloHandle secondary = cluster.SecondarySilos[0];
            string? away = null;
            for (int i = 0; i < Grains && away is null; i++)
            {
                IPinnedCounterGrain grain = cluster.GrainFactory.GetGrain<IPinnedCounterGrain>($"d{i}");
                await grain.AddAsync(1);
                if (await grain.GetSiloAsync() == secondary.Name)
                {
                    away = $"d{i}";
                }
            }

            Assert.NotNull(away);
            await cluster.StopSiloAsync(secondary);
            Exception refused = await Assert.ThrowsAnyAsync<Exception>(
                () => cluster.GrainFactory.GetGrain<IPinnedCounterGrain>(away).GetAsync());
            Assert.Contains("keeps its state in HybridKV", refused.ToString(), StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task A_silo_whose_name_is_not_in_the_placement_list_is_refused_at_start()
    {
        Exception error = await Assert.ThrowsAnyAsync<Exception>(
            () => Clusters.DeployAsync(_directory.Path, silos: 1, placementNames: "silo-a,silo-b"));
        Assert.Contains("not in HybridKVPlacementOptions.SiloNames", error.ToString(), StringComparison.Ordinal);
    }
}
