namespace HybridKV.Server.Protocol;

/// <summary>What <see cref="RespParser"/> made of the bytes it was given.</summary>
internal enum ParseStatus
{
    /// <summary>A whole command: its arguments are in the argument list.</summary>
    Complete,

    /// <summary>The bytes end inside a command: read more, then parse again from the same start.</summary>
    Incomplete,

    /// <summary>The bytes break the protocol or a limit: reply with the error and close the connection.</summary>
    Malformed,
}
