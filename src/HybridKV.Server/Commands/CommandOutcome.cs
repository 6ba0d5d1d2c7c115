namespace HybridKV.Server.Commands;

/// <summary>What the connection does after the dispatcher ran a command.</summary>
internal enum CommandOutcome
{
    /// <summary>The reply is written: go on with the next command.</summary>
    Done,

    /// <summary>The reply is written: flush it and close the connection (QUIT).</summary>
    Close,
}
