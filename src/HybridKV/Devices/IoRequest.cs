namespace HybridKV.Devices;

/// <summary>Blocking work for the <see cref="IoThreadPool"/>: run on one of its threads, or cancelled before it
/// started.</summary>
internal abstract class IoRequest
{
    /// <summary>Does the work and completes the request; never throws.</summary>
    public abstract void Run();

    /// <summary>Completes the request as cancelled, its work not done.</summary>
    public abstract void Cancel(CancellationToken cancellationToken);
}
