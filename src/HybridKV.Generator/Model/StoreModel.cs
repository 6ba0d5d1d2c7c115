namespace HybridKV.Generator.Model;

/// <summary>
/// Everything the emitter needs to write one store, as strings and flags only: no symbol or syntax node, so that two
/// parses of an unchanged class compare equal and the pipeline skips emitting again.
/// </summary>
/// <param name="Namespace">The class's namespace, or null for the global namespace.</param>
/// <param name="ContainingTypes">The types the class is nested in, outermost first.</param>
/// <param name="ClassName">The attributed class's name.</param>
/// <param name="ClassKeyword">"class" or "record", as the class is declared.</param>
/// <param name="FullClassName">The class's fully qualified name, used to call its static callbacks.</param>
/// <param name="Accessibility">"public" when every type the store exposes is public, otherwise "internal".</param>
/// <param name="Key">The key type.</param>
/// <param name="Value">The value type.</param>
/// <param name="Input">The input type.</param>
/// <param name="Output">The output type.</param>
/// <param name="Context">The context type.</param>
/// <param name="KeyHash">How the generated functions hash and compare keys when the class does not.</param>
/// <param name="UserCallbacks">The names of the callbacks the class writes itself.</param>
/// <param name="StoreTypeName">The name of the generated store class.</param>
/// <param name="SessionTypeName">The name of the generated session class.</param>
/// <param name="VariableValue">Whether values are byte sequences (<c>HybridKV.VarBytes</c>).</param>
/// <param name="ReadsIntoBytes">Whether the output is <c>HybridKV.VarBytesOutput</c> over byte-sequence values, so
/// that reads copy into a caller's buffer or pooled memory.</param>
internal sealed record StoreModel(
    string? Namespace,
    EquatableArray<ContainingTypeModel> ContainingTypes,
    string ClassName,
    string ClassKeyword,
    string FullClassName,
    string Accessibility,
    string Key,
    string Value,
    string Input,
    string Output,
    string Context,
    KeyHashKind KeyHash,
    EquatableArray<string> UserCallbacks,
    string StoreTypeName,
    string SessionTypeName,
    bool VariableValue,
    bool ReadsIntoBytes)
{
    /// <summary>Whether keys are byte sequences (<c>HybridKV.VarBytes</c>).</summary>
    public bool VariableKey => KeyHash == KeyHashKind.ByteSequence;

    public bool Writes(string callback)
    {
        foreach (string name in UserCallbacks)
        {
            if (name == callback)
            {
                return true;
            }
        }

        return false;
    }
}

/// <summary>A type the attributed class is nested in: its keyword (class, struct, record...) and name.</summary>
internal sealed record ContainingTypeModel(string Keyword, string Name);

/// <summary>How generated code hashes and compares keys.</summary>
internal enum KeyHashKind
{
    /// <summary>An integer, char, bool or enum: widened to 64 bits and mixed; compared with <c>==</c>.</summary>
    Integral,

    /// <summary>Any other unmanaged struct: its bytes are hashed and compared.</summary>
    Bytes,

    /// <summary>A byte sequence (<c>HybridKV.VarBytes</c>): the bytes it describes are hashed and compared.</summary>
    ByteSequence,
}
