namespace HybridKV.Tests.Support;

/// <summary>
/// Runs asynchronous store calls from synchronous code that must block (FsCheck properties, worker threads), off any
/// synchronization context.
/// </summary>
public static class Blocking
{
    public static T Run<T>(Func<Task<T>> call) => Task.Run(call).GetAwaiter().GetResult();

    public static void Run(Func<Task> call) => Task.Run(call).GetAwaiter().GetResult();
}
