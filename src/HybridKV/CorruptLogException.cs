namespace HybridKV;

/// <summary>
/// A record read back from the log device is not the one that was written there: its checksum does not match, or the
/// bytes are missing (a deleted or truncated segment file reads as zeros). The message names the log address and where
/// the device keeps it; nothing of the damaged record was used.
/// </summary>
public sealed class CorruptLogException : IOException
{
    /// <summary>Creates the exception for the record at <paramref name="address"/>.</summary>
    /// <param name="address">The record's log address.</param>
    /// <param name="location">Where the device keeps that address (a file and offset, say).</param>
    /// <param name="problem">What is wrong with it.</param>
    public CorruptLogException(long address, string location, string problem)
        : base($"The log is damaged at address {address} ({location}): {problem}. No value was read from it.")
    {
        Address = address;
    }

    /// <summary>Creates the exception with a default message.</summary>
    public CorruptLogException()
        : base("The log is damaged.")
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public CorruptLogException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the failure underneath.</summary>
    public CorruptLogException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>The log address of the damaged record, or -1 when unknown.</summary>
    public long Address { get; } = -1;
}
