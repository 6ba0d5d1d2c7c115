using HybridKV.Index;

namespace HybridKV.Tests.Support;

/// <summary>
/// Holds the next index resize of a store in one phase (through <see cref="IndexGrowth.PhaseGate"/>) until
/// <see cref="Release"/>: a test then operates while the resize is exactly there, with nothing left to timing.
/// </summary>
internal sealed class ResizeHold
{
    private readonly TaskCompletionSource _reached = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _release = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Holds <paramref name="growth"/>'s resizes in <paramref name="phase"/> from now on.</summary>
    public ResizeHold(IndexGrowth growth, ResizePhase phase)
    {
        growth.PhaseGate = entered =>
        {
            if (entered != phase)
            {
                return Task.CompletedTask;
            }

            _reached.TrySetResult();
            return _release.Task;
        };
    }

    /// <summary>Completes once a resize is held in the phase.</summary>
    public Task Reached => _reached.Task;

    /// <summary>Lets the held resize go on.</summary>
    public void Release() => _release.TrySetResult();
}
