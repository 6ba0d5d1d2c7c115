namespace HybridKV.Scanning;

/// <summary>Iterates an asynchronous sequence from synchronous code, blocking while it waits for the device.</summary>
internal static class BlockingEnumerable
{
    public static IEnumerable<T> Of<T>(IAsyncEnumerable<T> source)
    {
        IAsyncEnumerator<T> enumerator = source.GetAsyncEnumerator();
        try
        {
            while (enumerator.MoveNextAsync().AsTask().GetAwaiter().GetResult())
            {
                yield return enumerator.Current;
            }
        }
        finally
        {
            enumerator.DisposeAsync().AsTask().GetAwaiter().GetResult();
        }
    }
}
