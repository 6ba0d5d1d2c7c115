namespace HybridKV.Server.Storage;

/// <summary>What a read or read-modify-write of the server's store does (carried by <see cref="RespInput"/>).</summary>
internal enum RespOperation : byte
{
    /// <summary>Read: copy the value to the results.</summary>
    Get,

    /// <summary>Read: whether the key exists.</summary>
    Exists,

    /// <summary>Read: the value's length.</summary>
    Length,

    /// <summary>Read: the value's expiry header.</summary>
    Expiry,

    /// <summary>RMW: add <see cref="RespInput.Number"/> to an integer value (0 when absent).</summary>
    IncrementBy,

    /// <summary>RMW: append <see cref="RespInput.Data"/> to the value (create it when absent).</summary>
    Append,

    /// <summary>RMW: set the value only if the key is absent (SET NX).</summary>
    SetIfAbsent,

    /// <summary>RMW: set the value only if the key exists (SET XX); a placeholder when it does not.</summary>
    SetIfPresent,

    /// <summary>RMW: set the value and return the old one (SET GET).</summary>
    SetAndGet,

    /// <summary>RMW: set the expiry of an existing value; a placeholder when it does not exist.</summary>
    SetExpiry,

    /// <summary>RMW: replace the value with a placeholder (DEL), saying whether there was one; the command gives the
    /// record an expiry already past, so that compaction drops it as it would a tombstone.</summary>
    Remove,

    /// <summary>RMW: as <see cref="Remove"/>, copying the value to the results first (GETDEL).</summary>
    TakeAndRemove,
}
