namespace HybridKV;

/// <summary>What a new store does when its log device or checkpoint store already holds a store.</summary>
public enum ExistingDataPolicy
{
    /// <summary>
    /// The store must be recovered with <c>RecoverAsync</c> before it is used: until then, opening a session, taking a
    /// checkpoint or moving the log's begin address throws <see cref="InvalidOperationException"/>, and nothing on disk
    /// changes. The default.
    /// </summary>
    Recover = 0,

    /// <summary>The existing log and every checkpoint are deleted when the store is created; it starts empty.</summary>
    Delete = 1,
}
