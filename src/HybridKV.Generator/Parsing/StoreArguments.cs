using Microsoft.CodeAnalysis;

namespace HybridKV.Generator.Parsing;

/// <summary>The named arguments of one [GeneratedStore] attribute, read but not yet checked.</summary>
internal sealed class StoreArguments
{
    public const string DefaultStoreTypeName = "Store";
    public const string DefaultSessionTypeName = "Session";

    public ITypeSymbol? Key { get; private set; }

    public ITypeSymbol? Value { get; private set; }

    public ITypeSymbol? Input { get; private set; }

    public ITypeSymbol? Output { get; private set; }

    public ITypeSymbol? Context { get; private set; }

    public string StoreTypeName { get; private set; } = DefaultStoreTypeName;

    public string SessionTypeName { get; private set; } = DefaultSessionTypeName;

    /// <summary>Whether an argument names a type the compiler could not resolve (it reports that error itself).</summary>
    public bool HasErrorType { get; private set; }

    public static StoreArguments Read(AttributeData attribute)
    {
        var arguments = new StoreArguments();
        foreach (var named in attribute.NamedArguments)
        {
            TypedConstant constant = named.Value;
            if (constant.Kind == TypedConstantKind.Error)
            {
                arguments.HasErrorType = true;
                continue;
            }

            switch (named.Key)
            {
                case "Key": arguments.Key = arguments.TypeOf(constant); break;
                case "Value": arguments.Value = arguments.TypeOf(constant); break;
                case "Input": arguments.Input = arguments.TypeOf(constant); break;
                case "Output": arguments.Output = arguments.TypeOf(constant); break;
                case "Context": arguments.Context = arguments.TypeOf(constant); break;
                case "StoreTypeName": arguments.StoreTypeName = constant.Value as string ?? string.Empty; break;
                case "SessionTypeName": arguments.SessionTypeName = constant.Value as string ?? string.Empty; break;
                default: break;
            }
        }

        return arguments;
    }

    private ITypeSymbol? TypeOf(TypedConstant constant)
    {
        var type = constant.Value as ITypeSymbol;
        if (type is IErrorTypeSymbol)
        {
            HasErrorType = true;
            return null;
        }

        return type;
    }
}
