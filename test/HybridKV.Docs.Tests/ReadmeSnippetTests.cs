namespace HybridKV.Docs.Tests;

/// <summary>
/// Every <c>```csharp</c> block of the README and of the package readmes (<c>src/*/README.md</c>) compiles, with the
/// generator, against the real libraries. How a block is wrapped, and how a fragment declares what it relies on with
/// a hidden prelude, is in <see cref="SnippetCompiler"/>. Output, shell and configuration belong in other fences.
/// </summary>
[Trait("Category", "Docs")]
public sealed class ReadmeSnippetTests
{
    private static readonly Lazy<IReadOnlyDictionary<string, Snippet>> Snippets = new(() =>
    {
        string root = RepositoryRoot();
        IEnumerable<string> files = Directory.GetFiles(Path.Combine(root, "src"), "README.md", SearchOption.AllDirectories)
            .Order(StringComparer.Ordinal)
            .Prepend(Path.Combine(root, "README.md"));
        return files
            .SelectMany(path => MarkdownSnippets.Extract(
                Path.GetRelativePath(root, path).Replace('\\', '/'), File.ReadAllText(path)))
            .ToDictionary(snippet => snippet.Id);
    });

    /// <summary>The blocks, by <see cref="Snippet.Id"/> (file and line of the fence), one test case each.</summary>
    public static TheoryData<string> SnippetIds => [.. Snippets.Value.Keys];

    [Theory]
    [MemberData(nameof(SnippetIds))]
    public void The_snippet_compiles(string id)
    {
        var problems = SnippetCompiler.Compile(Snippets.Value[id]);

        Assert.True(problems.Count == 0,
            $"The C# block at {id} does not compile:{Environment.NewLine}{SnippetCompiler.Describe(problems)}");
    }

    [Fact]
    public void The_readmes_have_their_csharp_blocks_found()
    {
        // A guard against an extractor that silently finds nothing: the README alone has more than ten.
        Assert.True(Snippets.Value.Keys.Count(id => id.StartsWith("README.md:", StringComparison.Ordinal)) >= 10);
        Assert.Contains(Snippets.Value.Keys, id => id.StartsWith("src/HybridKV.Orleans/README.md:", StringComparison.Ordinal));
    }

    [Fact]
    public void A_broken_block_fails_with_its_markdown_line_and_the_compiler_message()
    {
        const string markdown = """
            Text.

            ```csharp
            using var store = new Counts.Store(new StoreSettings());
            Console.NoSuchMethod();
            ```
            """;
        Snippet snippet = Assert.Single(MarkdownSnippets.Extract("DOC.md", markdown));

        string problems = SnippetCompiler.Describe(SnippetCompiler.Compile(snippet));

        Assert.Equal("DOC.md:3", snippet.Id);
        Assert.Contains("DOC.md(4,23): error CS0246: The type or namespace name 'Counts'", problems, StringComparison.Ordinal);
        Assert.Contains("DOC.md(5,9): error CS0117: 'Console' does not contain", problems, StringComparison.Ordinal);
    }

    [Fact]
    public void A_prelude_declares_what_its_block_uses_and_the_generator_runs_on_it()
    {
        const string markdown = """
            <!-- snippet prelude
            using System.Text;
            using var store = new Counts.Store(new StoreSettings());
            [GeneratedStore(Key = typeof(long), Value = typeof(long))] static partial class Counts;
            -->

            ```csharp
            using System.Buffers;
            using Counts.Session session = store.NewSession();
            session.RMW(1, 2);
            Console.WriteLine(Encoding.UTF8.GetByteCount("x") + ArrayPool<byte>.Shared.Rent(1).Length);
            ```

            ```json
            { "not": "C#" }
            ```

            ```csharp
            session.RMW(1, 2);
            ```
            """;
        IReadOnlyList<Snippet> snippets = MarkdownSnippets.Extract("DOC.md", markdown);

        Assert.Equal(2, snippets.Count);
        Assert.Empty(SnippetCompiler.Compile(snippets[0]));
        // The prelude belongs to the first block only: the second has no session.
        string problems = SnippetCompiler.Describe(SnippetCompiler.Compile(snippets[1]));
        Assert.Contains("DOC.md(19,", problems, StringComparison.Ordinal);
        Assert.Contains("CS0103", problems, StringComparison.Ordinal);
    }

    private static string RepositoryRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Store.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Store.sln above {AppContext.BaseDirectory}.");
    }
}
