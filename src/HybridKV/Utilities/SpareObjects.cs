using System.Diagnostics.CodeAnalysis;

namespace HybridKV.Utilities;

/// <summary>
/// Objects kept for reuse, taken and given back from any thread (a lock around a stack): the log's page flushes, a
/// file device's writes and a session's pending operations, so that what runs once per page or per device read
/// allocates nothing once the first ones were made.
/// </summary>
/// <param name="capacity">The most kept; one given back beyond it is left to its owner (to free).</param>
internal sealed class SpareObjects<T>(int capacity = int.MaxValue)
    where T : class
{
    private readonly Stack<T> _spares = new();

    /// <summary>How many are kept now.</summary>
    public int Count
    {
        get
        {
            lock (_spares)
            {
                return _spares.Count;
            }
        }
    }

    /// <summary>Takes a kept object, if there is one.</summary>
    public bool TryTake([NotNullWhen(true)] out T? spare)
    {
        lock (_spares)
        {
            return _spares.TryPop(out spare);
        }
    }

    /// <summary>Keeps <paramref name="spare"/> for reuse; false when <c>capacity</c> are kept already.</summary>
    public bool TryKeep(T spare)
    {
        lock (_spares)
        {
            if (_spares.Count >= capacity)
            {
                return false;
            }

            _spares.Push(spare);
            return true;
        }
    }
}
