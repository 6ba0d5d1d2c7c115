namespace HybridKV;

/// <summary>A type with no data, for a store that needs no input, output or context of its own.</summary>
public readonly struct Empty : IEquatable<Empty>
{
    /// <inheritdoc/>
    public bool Equals(Empty other) => true;

    /// <inheritdoc/>
    public override bool Equals(object? obj) => obj is Empty;

    /// <inheritdoc/>
    public override int GetHashCode() => 0;

    /// <summary>Always <see langword="true"/>.</summary>
    public static bool operator ==(Empty left, Empty right) => true;

    /// <summary>Always <see langword="false"/>.</summary>
    public static bool operator !=(Empty left, Empty right) => false;
}
