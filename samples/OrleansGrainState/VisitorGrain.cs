namespace OrleansGrainState;

/// <summary>Counts a visitor's visits; the count is the grain's persistent state.</summary>
public interface IVisitorGrain : IGrainWithStringKey
{
    /// <summary>Records a visit and returns the visits so far, once durable.</summary>
    Task<long> VisitAsync();
}

/// <summary>The visits of one visitor, as stored.</summary>
[GenerateSerializer]
public sealed class VisitorState
{
    /// <summary>Visits so far.</summary>
    [Id(0)]
    public long Visits { get; set; }
}

/// <summary>Keeps its <see cref="VisitorState"/> in the HybridKV grain storage named "visits".</summary>
public sealed class VisitorGrain([PersistentState("visitor", "visits")] IPersistentState<VisitorState> state)
    : Grain, IVisitorGrain
{
    /// <inheritdoc/>
    public async Task<long> VisitAsync()
    {
        state.State.Visits++;
        await state.WriteStateAsync();
        return state.State.Visits;
    }
}
