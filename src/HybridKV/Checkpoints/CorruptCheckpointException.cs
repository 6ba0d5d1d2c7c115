namespace HybridKV.Checkpoints;

/// <summary>
/// Thrown when checkpoints exist but none of them verifies: the message names every file that is missing, truncated or
/// corrupt. Nothing is recovered from a partial state.
/// </summary>
public sealed class CorruptCheckpointException : Exception
{
    /// <summary>Creates the exception with the list of problems.</summary>
    public CorruptCheckpointException(IReadOnlyList<string> problems)
        : base("No checkpoint could be used:" + Environment.NewLine + string.Join(Environment.NewLine, problems))
    {
        Problems = problems;
    }

    /// <summary>Creates the exception with a message.</summary>
    public CorruptCheckpointException(string message)
        : base(message)
    {
        Problems = [message];
    }

    /// <summary>Creates the exception with a message and a cause.</summary>
    public CorruptCheckpointException(string message, Exception innerException)
        : base(message, innerException)
    {
        Problems = [message];
    }

    /// <summary>Creates the exception with a default message.</summary>
    public CorruptCheckpointException()
        : this("No checkpoint could be used.")
    {
    }

    /// <summary>One line per problem: the checkpoint, the file, and what is wrong with it.</summary>
    public IReadOnlyList<string> Problems { get; }
}
