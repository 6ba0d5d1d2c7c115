namespace HybridKV;

/// <summary>Hashing and equality of keys, bound statically through the functions struct.</summary>
/// <typeparam name="TKey">The key type.</typeparam>
public interface IKeyComparer<TKey>
{
    /// <summary>
    /// A 64-bit hash of the key. The low bits choose the hash bucket and bits 48–62 the tag, so every bit should
    /// depend on every bit of the key (see <see cref="KeyHashing"/>).
    /// </summary>
    long GetHashCode64(in TKey key);

    /// <summary>Whether two keys are equal.</summary>
    bool KeyEquals(in TKey first, in TKey second);
}
