using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Text;

namespace HybridKV.Generator.Model;

/// <summary>A diagnostic as plain data (a <see cref="Location"/> holds a syntax tree, which would defeat caching).</summary>
internal sealed record DiagnosticInfo(string Id, LocationInfo? Location, EquatableArray<string> Arguments)
{
    public static DiagnosticInfo Create(DiagnosticDescriptor descriptor, Location? location, params string[] arguments) =>
        new(descriptor.Id, LocationInfo.From(location), new EquatableArray<string>(arguments));

    public Diagnostic ToDiagnostic()
    {
        object[] arguments = new object[Arguments.Count];
        for (int i = 0; i < arguments.Length; i++)
        {
            arguments[i] = Arguments[i];
        }

        return Diagnostic.Create(Descriptors.ById(Id), Location?.ToLocation(), arguments);
    }
}

/// <summary>Where a diagnostic points: a file and a span in it.</summary>
internal sealed record LocationInfo(string FilePath, TextSpan Span, LinePositionSpan LineSpan)
{
    public static LocationInfo? From(Location? location) =>
        location is null || location.SourceTree is null
            ? null
            : new LocationInfo(location.SourceTree.FilePath, location.SourceSpan, location.GetLineSpan().Span);

    public Location ToLocation() => Location.Create(FilePath, Span, LineSpan);
}
