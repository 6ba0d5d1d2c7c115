using System.Collections.Generic;
using Microsoft.CodeAnalysis;

namespace HybridKV.Generator.Parsing;

/// <summary>The store's types, resolved (defaults applied), by the role they play in callbacks.</summary>
internal sealed record RoleTypes(
    ITypeSymbol Key, ITypeSymbol Value, ITypeSymbol Input, ITypeSymbol Output, ITypeSymbol Context, ITypeSymbol Status)
{
    public IEnumerable<ITypeSymbol> All => [Key, Value, Input, Output, Context];

    public ITypeSymbol Of(Role role) => role switch
    {
        Role.Key => Key,
        Role.Value => Value,
        Role.Input => Input,
        Role.Output => Output,
        Role.Context => Context,
        _ => Status,
    };

    public bool InputIsValue => SymbolEqualityComparer.Default.Equals(Input, Value);

    public bool OutputIsValue => SymbolEqualityComparer.Default.Equals(Output, Value);

    /// <summary>Whether values are byte sequences (<c>HybridKV.VarBytes</c>).</summary>
    public bool VariableValue => TypeRules.IsByteSequence(Value);

    /// <summary>Whether a read can copy the value out without a reader callback.</summary>
    public bool ReaderHasDefault => VariableValue ? TypeRules.IsByteSequenceOutput(Output) : OutputIsValue;
}
