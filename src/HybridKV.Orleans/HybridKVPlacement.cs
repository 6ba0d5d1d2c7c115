using System.Text;
using Microsoft.Extensions.Options;
using Orleans.Placement;
using Orleans.Runtime;
using Orleans.Runtime.Placement;

namespace HybridKV.Orleans;

/// <summary>
/// Places each grain on the silo whose HybridKV store holds its state: the same silo, by name, every time, chosen
/// among a fixed list of silo names by rendezvous hashing of the grain id. While that silo is not active the grain is
/// not activated anywhere (the call fails), instead of starting elsewhere from an empty state.
/// </summary>
public sealed class HybridKVPlacement : PlacementStrategy
{
    /// <summary>The strategy (it has no settings of its own; the silo names are in <see cref="HybridKVPlacementOptions"/>).</summary>
    public static HybridKVPlacement Instance { get; } = new();
}

/// <summary>Marks a grain class to be placed by <see cref="HybridKVPlacement"/>: always on the silo holding its state.</summary>
[AttributeUsage(AttributeTargets.Class, AllowMultiple = false)]
public sealed class HybridKVPlacementAttribute : PlacementAttribute
{
    /// <summary>Places the grain class by <see cref="HybridKVPlacement"/>.</summary>
    public HybridKVPlacementAttribute()
        : base(HybridKVPlacement.Instance)
    {
    }
}

/// <summary>The silos grains are placed on by <see cref="HybridKVPlacement"/>.</summary>
/// <remarks>A class with a settable list, as options are: the options pattern fills it.</remarks>
public sealed class HybridKVPlacementOptions
{
    /// <summary>
    /// Every silo name of the cluster (<c>SiloOptions.SiloName</c>, stable across restarts), in any order. A grain's
    /// silo depends only on its id and this list: adding or removing a name moves about 1/n of the grains, to silos that
    /// do not hold their state.
    /// </summary>
    public IList<string> SiloNames { get; } = new List<string>();
}

/// <summary>Chooses the owner silo of a grain and activates it only there.</summary>
internal sealed class HybridKVPlacementDirector(IClusterMembershipService membership, IOptions<HybridKVPlacementOptions> options)
    : IPlacementDirector
{
    public Task<SiloAddress> OnAddActivation(PlacementStrategy strategy, PlacementTarget target, IPlacementContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        string owner = OwnerOf(target.GrainIdentity, options.Value.SiloNames);
        SiloAddress[] compatible = context.GetCompatibleSilos(target);
        foreach (ClusterMember member in membership.CurrentSnapshot.Members.Values)
        {
            if (member.Status == SiloStatus.Active && member.Name == owner && compatible.Contains(member.SiloAddress))
            {
                return Task.FromResult(member.SiloAddress);
            }
        }

        throw new OrleansException(
            $"Grain {target.GrainIdentity} keeps its state in HybridKV on silo '{owner}', which is not active now: it is " +
            "activated only there, so that it never starts from an empty state on another silo. Call it again once " +
            $"'{owner}' is back.");
    }

    /// <summary>The silo name with the highest hash of (grain, name): stable, and spread evenly.</summary>
    internal static string OwnerOf(GrainId grain, IEnumerable<string> siloNames)
    {
        string? owner = null;
        long best = long.MinValue;
        foreach (string name in siloNames)
        {
            long score = KeyHashing.HashSpan(Encoding.UTF8.GetBytes($"{grain}\u001f{name}"));
            if (owner is null || score > best || (score == best && string.CompareOrdinal(name, owner) < 0))
            {
                owner = name;
                best = score;
            }
        }

        return owner ?? throw new OrleansException(
            "HybridKVPlacementOptions.SiloNames is empty: name every silo of the cluster (AddHybridKVPlacement).");
    }
}
