using Orleans;
using Orleans.Runtime;

namespace HybridKV.Orleans.Tests;

/// <summary>A grain whose count is persisted through the HybridKV provider named <see cref="StorageName"/>.</summary>
public interface ICounterGrain : IGrainWithStringKey
{
    Task<long> AddAsync(long amount);

    Task<long> GetAsync();

    Task<string?> GetETagAsync();

    Task ClearAsync();

    Task DeactivateAsync();

    Task<string> GetSiloAsync();
}

[GenerateSerializer]
public sealed class CounterState
{
    [Id(0)]
    public long Count { get; set; }

    [Id(1)]
    public List<string> History { get; set; } = [];
}

/// <summary>What both counters do with their persisted state.</summary>
public abstract class CounterGrainBase(IPersistentState<CounterState> state, ILocalSiloDetails silo) : Grain
{
    public async Task<long> AddAsync(long amount)
    {
        state.State.Count += amount;
        state.State.History.Add($"+{amount}");
        await state.WriteStateAsync();
        return state.State.Count;
    }

    public Task<long> GetAsync() => Task.FromResult(state.State.Count);

    public Task<string?> GetETagAsync() => Task.FromResult(state.Etag);

    public Task ClearAsync() => state.ClearStateAsync();

    public Task DeactivateAsync()
    {
        DeactivateOnIdle();
        return Task.CompletedTask;
    }

    public Task<string> GetSiloAsync() => Task.FromResult(silo.Name);
}

public sealed class CounterGrain(
    [PersistentState("counter", CounterGrain.StorageName)] IPersistentState<CounterState> state,
    ILocalSiloDetails silo) : CounterGrainBase(state, silo), ICounterGrain
{
    public const string StorageName = "hybridkv";
}

/// <summary>The same counter, always placed on the silo holding its state.</summary>
public interface IPinnedCounterGrain : ICounterGrain
{
}

[HybridKVPlacement]
public sealed class PinnedCounterGrain(
    [PersistentState("counter", CounterGrain.StorageName)] IPersistentState<CounterState> state,
    ILocalSiloDetails silo) : CounterGrainBase(state, silo), IPinnedCounterGrain
{
}
