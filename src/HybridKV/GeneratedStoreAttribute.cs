namespace HybridKV;

/// <summary>
/// Asks the HybridKV source generator to turn a <see langword="partial"/> class into a store: the class names its
/// types here and writes its callbacks (FASTER appendix E) as <see langword="static"/> methods; the generator adds a
/// nested <c>Store</c>, its <c>Session</c>, and the <c>Functions</c> struct that binds every callback statically.
/// </summary>
/// <remarks>
/// Callbacks the class leaves out get defaults: a reader copies the value to the output (Output must then be the
/// Value type), writers assign, <c>CopyUpdater</c> copies the old value and applies <c>InPlaceUpdater</c> to the copy,
/// <c>InitialUpdater</c> applies <c>InPlaceUpdater</c> to a default value, and without any RMW callback an RMW stores
/// its input (Input must then be the Value type). Keys of primitive and enum types hash and compare by value; other
/// key structs by their bytes, unless the class writes <c>GetHashCode64</c> and <c>KeyEquals</c>.
/// </remarks>
[AttributeUsage(AttributeTargets.Class, AllowMultiple = false, Inherited = false)]
public sealed class GeneratedStoreAttribute : Attribute
{
    /// <summary>The key type: an unmanaged struct (required).</summary>
    public Type? Key { get; set; }

    /// <summary>The value type: an unmanaged struct (required).</summary>
    public Type? Value { get; set; }

    /// <summary>What reads and RMWs pass to the callbacks; the Value type when not given.</summary>
    public Type? Input { get; set; }

    /// <summary>What reads produce; the Value type when not given.</summary>
    public Type? Output { get; set; }

    /// <summary>User state handed back to completion callbacks; <see cref="Empty"/> when not given.</summary>
    public Type? Context { get; set; }

    /// <summary>The name of the generated store class; <c>Store</c> when not given.</summary>
    public string StoreTypeName { get; set; } = "Store";

    /// <summary>The name of the generated session class; <c>Session</c> when not given.</summary>
    public string SessionTypeName { get; set; } = "Session";
}
