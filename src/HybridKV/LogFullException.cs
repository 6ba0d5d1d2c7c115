namespace HybridKV;

/// <summary>
/// Thrown when the log needs a new page but every page frame of the memory budget holds live data that cannot be
/// evicted. Nothing is overwritten: the operation that hit the limit did not happen, and earlier data is intact.
/// </summary>
public sealed class LogFullException : InvalidOperationException
{
    /// <summary>Creates the exception with a message stating the limit.</summary>
    public LogFullException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the underlying cause.</summary>
    public LogFullException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates the exception with a default message.</summary>
    public LogFullException()
        : base("The log is full.")
    {
    }
}
