namespace HybridKV.Server.Commands;

/// <summary>The commands the server knows, by family (the file that implements each is named in its group).</summary>
internal enum RespCommand : byte
{
    /// <summary>Not a command the server knows.</summary>
    Unknown,

    // StringCommands
    Get,
    Set,
    MGet,
    MSet,
    Incr,
    IncrBy,
    Decr,
    DecrBy,
    Append,
    StrLen,
    GetDel,
    SetNx,
    SetEx,
    PSetEx,

    // KeyCommands
    Del,
    Unlink,
    Persist,
    Exists,
    Expire,
    PExpire,
    Ttl,
    PTtl,
    DbSize,
    Scan,

    // ConnectionCommands
    Ping,
    Echo,
    Hello,
    Auth,
    Quit,
    Select,
    Client,

    // ServerCommands
    Info,
    Command,
    Config,
    Save,
    BgSave,
    LastSave,

    // DurabilityCommands (HKV.*)
    HkvCommit,
    HkvSession,
    HkvContinue,
    HkvDurable,
}
