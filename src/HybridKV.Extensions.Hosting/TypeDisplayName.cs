namespace HybridKV.Extensions.Hosting;

/// <summary>
/// A store type as logs, meters and messages show it: <c>HybridKV.HybridKVStore&lt;VarBytes, VarBytes, RespInput,
/// Empty, Empty, RespFunctions&gt;</c> rather than the runtime's <c>HybridKVStore`6[[HybridKV.VarBytes, HybridKV,
/// Version=..., Culture=..., PublicKeyToken=...], ...]</c>, which repeated every argument's assembly in every line.
/// </summary>
internal static class TypeDisplayName
{
    /// <summary>The type's full name, its generic arguments by their own names (nested types as
    /// <c>Outer.Inner</c>); a type that is not generic is its <see cref="Type.FullName"/>.</summary>
    public static string Of(Type type)
    {
        ArgumentNullException.ThrowIfNull(type);
        return type.IsGenericType ? Format(type, qualified: true) : type.FullName ?? type.Name;
    }

    private static string Format(Type type, bool qualified)
    {
        if (type.IsArray)
        {
            return Format(type.GetElementType()!, qualified) + "[" + new string(',', type.GetArrayRank() - 1) + "]";
        }

        int arity = type.Name.IndexOf('`', StringComparison.Ordinal);
        string name = arity < 0 ? type.Name : type.Name[..arity];
        Type[] arguments = type.GetGenericArguments();
        int inherited = 0;
        if (type.IsNested && !type.IsGenericParameter)
        {
            // A nested type's arguments begin with its declaring type's, which reflection gives as a definition.
            Type declaring = type.DeclaringType!;
            inherited = declaring.GetGenericArguments().Length;
            if (inherited > 0 && declaring.IsGenericTypeDefinition && !type.IsGenericTypeDefinition)
            {
                declaring = declaring.MakeGenericType(arguments[..inherited]);
            }

            name = Format(declaring, qualified) + "." + name;
        }
        else if (qualified && !string.IsNullOrEmpty(type.Namespace))
        {
            name = type.Namespace + "." + name;
        }

        // Each level shows only its own arguments.
        return arguments.Length > inherited && type.IsGenericType
            ? name + "<" + string.Join(", ", arguments.Skip(inherited).Select(a => Format(a, qualified: false))) + ">"
            : name;
    }
}
