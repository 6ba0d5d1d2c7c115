using System.Collections.Immutable;
using System.Globalization;
using System.Text;
using HybridKV.Generator;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace HybridKV.Docs.Tests;

/// <summary>
/// Compiles a markdown C# block the way a user's project would compile it, and returns its problems.
/// </summary>
/// <remarks>
/// <para>
/// <b>The wrapping rule.</b> A block is the <c>Program.cs</c> of a console application: top-level statements (so
/// <c>await</c> works), then any types it declares. It sees the implicit usings of an SDK project
/// (<see cref="GlobalUsings"/>: those of an ASP.NET project with Orleans, plus <c>HybridKV</c>), and nothing else: no
/// variable, no type, no other using. A block
/// that is a fragment of a longer program says what it relies on in a hidden prelude, an HTML comment directly before
/// its fence:
/// </para>
/// <code>
/// &lt;!-- snippet prelude
/// using var store = new Counts.Store(new StoreSettings());
/// [GeneratedStore(Key = typeof(long), Value = typeof(long))] static partial class Counts;
/// --&gt;
/// </code>
/// <para>
/// The prelude is C# of the same kind. The two are merged by kind, the prelude's first: using directives, then
/// statements, then type declarations, which is the order C# requires. Blocks are compiled, never run, so a prelude
/// may declare what the block needs with <c>default!</c>.
/// </para>
/// <para>
/// The compilation has the repository's settings: latest language, nullable enabled, every warning reported and
/// treated as a problem. References are the assemblies this test runs with (HybridKV, its Azure, hosting and Orleans
/// packages, ASP.NET Core), and the HybridKV source generator runs on it as it does in a project that references the
/// package. Problems are reported at their line in the markdown file through <c>#line</c> directives.
/// </para>
/// </remarks>
public static class SnippetCompiler
{
    /// <summary>
    /// The implicit usings of a <c>Microsoft.NET.Sdk.Web</c> project that references Orleans (<c>Orleans</c>,
    /// <c>Orleans.Hosting</c>, <c>Orleans.Runtime</c>), plus HybridKV's namespace, which fragments need not repeat.
    /// </summary>
    public static ImmutableArray<string> GlobalUsings { get; } =
    [
        "System", "System.Collections.Generic", "System.IO", "System.Linq", "System.Net.Http", "System.Net.Http.Json",
        "System.Threading", "System.Threading.Tasks", "Microsoft.AspNetCore.Builder", "Microsoft.AspNetCore.Hosting",
        "Microsoft.AspNetCore.Http", "Microsoft.AspNetCore.Routing", "Microsoft.Extensions.Configuration",
        "Microsoft.Extensions.DependencyInjection", "Microsoft.Extensions.Hosting", "Microsoft.Extensions.Logging",
        "Orleans", "Orleans.Hosting", "Orleans.Runtime", "HybridKV",
    ];

    private static readonly CSharpParseOptions ParseOptions = new(LanguageVersion.Latest);

    private static readonly Lazy<ImmutableArray<MetadataReference>> References = new(() =>
    [
        .. ((string)AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES")!)
            .Split(Path.PathSeparator)
            .Where(path => path.EndsWith(".dll", StringComparison.Ordinal))
            .Select(path => MetadataReference.CreateFromFile(path)),
    ]);

    /// <summary>Compiles <paramref name="snippet"/> and returns its warnings and errors, the generator's included.</summary>
    public static IReadOnlyList<Diagnostic> Compile(Snippet snippet)
    {
        SyntaxTree usings = CSharpSyntaxTree.ParseText(
            string.Concat(GlobalUsings.Select(name => $"global using {name};\n")), ParseOptions, path: "GlobalUsings.cs");
        SyntaxTree program = CSharpSyntaxTree.ParseText(Assemble(snippet), ParseOptions, path: "Program.cs");
        CSharpCompilation compilation = CSharpCompilation.Create(
            "Snippet",
            [usings, program],
            References.Value,
            new CSharpCompilationOptions(OutputKind.ConsoleApplication,
                nullableContextOptions: NullableContextOptions.Enable, warningLevel: 9999));
        CSharpGeneratorDriver.Create([new StoreGenerator().AsSourceGenerator()], parseOptions: ParseOptions)
            .RunGeneratorsAndUpdateCompilation(compilation, out Compilation output,
                out ImmutableArray<Diagnostic> generatorDiagnostics);
        return
        [
            .. generatorDiagnostics.Concat(output.GetDiagnostics())
                .Where(diagnostic => diagnostic.Severity >= DiagnosticSeverity.Warning),
        ];
    }

    /// <summary>Describes problems as <c>README.md(70,5): error CS0103: ...</c>, one a line.</summary>
    public static string Describe(IEnumerable<Diagnostic> diagnostics) =>
        string.Join(Environment.NewLine, diagnostics.Select(diagnostic =>
        {
            FileLinePositionSpan where = diagnostic.Location.GetMappedLineSpan();
            string at = where.IsValid
                ? string.Create(CultureInfo.InvariantCulture,
                    $"{where.Path}({where.StartLinePosition.Line + 1},{where.StartLinePosition.Character + 1})")
                : "(no location)";
            return $"{at}: {diagnostic.Severity.ToString().ToLowerInvariant()} {diagnostic.Id}: " +
                diagnostic.GetMessage(CultureInfo.InvariantCulture);
        }));

    /// <summary>The program a block stands for: prelude and block merged by kind, each piece at its markdown line.</summary>
    public static string Assemble(Snippet snippet)
    {
        var prelude = snippet.Prelude is null
            ? null
            : (CompilationUnitSyntax)CSharpSyntaxTree.ParseText(snippet.Prelude, ParseOptions).GetRoot();
        var block = (CompilationUnitSyntax)CSharpSyntaxTree.ParseText(snippet.Code, ParseOptions).GetRoot();
        var text = new StringBuilder();
        foreach (Func<CompilationUnitSyntax, IEnumerable<SyntaxNode>> kind in new Func<CompilationUnitSyntax, IEnumerable<SyntaxNode>>[]
        {
            unit => unit.Externs.Concat<SyntaxNode>(unit.Usings),
            unit => unit.Members.OfType<GlobalStatementSyntax>(),
            unit => unit.Members.Where(member => member is not GlobalStatementSyntax),
        })
        {
            if (prelude is not null)
            {
                Append(text, kind(prelude), snippet.File, snippet.PreludeLine);
            }

            Append(text, kind(block), snippet.File, snippet.Line);
        }

        return text.ToString();
    }

    private static void Append(StringBuilder text, IEnumerable<SyntaxNode> nodes, string file, int firstLine)
    {
        foreach (SyntaxNode node in nodes)
        {
            int line = firstLine + node.GetLocation().GetLineSpan().StartLinePosition.Line;
            text.Append(CultureInfo.InvariantCulture, $"#line {line} \"{file}\"\n").Append(node.ToString()).Append('\n');
        }
    }
}
