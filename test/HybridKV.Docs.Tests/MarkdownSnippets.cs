namespace HybridKV.Docs.Tests;

/// <summary>One <c>```csharp</c> block of a markdown file, with the hidden prelude that may precede it.</summary>
/// <param name="File">The markdown file, relative to the repository root (as failures name it).</param>
/// <param name="Line">The 1-based line of the block's first line of code (the line after the fence).</param>
/// <param name="Code">The block's text, its common indentation removed.</param>
/// <param name="Prelude">The prelude's text, or null when the block has none.</param>
/// <param name="PreludeLine">The 1-based line of the prelude's first line of code.</param>
public sealed record Snippet(string File, int Line, string Code, string? Prelude, int PreludeLine)
{
    /// <summary>Names the block as <c>README.md:66</c>, the line of the fence.</summary>
    public string Id => $"{File}:{Line - 1}";
}

/// <summary>
/// Finds the C# blocks of a markdown file: every fence opened with <c>```csharp</c> (indented ones in lists too) up to
/// its closing <c>```</c>. An HTML comment <c>&lt;!-- snippet prelude ... --&gt;</c> directly before a fence (blank lines
/// between are allowed) is that block's prelude; GitHub and nuget.org do not render it.
/// </summary>
public static class MarkdownSnippets
{
    /// <summary>Opens a prelude comment.</summary>
    public const string PreludeStart = "<!-- snippet prelude";

    /// <summary>Returns the C# blocks of <paramref name="markdown"/>, in order.</summary>
    /// <param name="file">What failures call the file.</param>
    /// <param name="markdown">The file's text.</param>
    public static IReadOnlyList<Snippet> Extract(string file, string markdown)
    {
        string[] lines = markdown.ReplaceLineEndings("\n").Split('\n');
        var snippets = new List<Snippet>();
        string? prelude = null;
        int preludeLine = 0;
        for (int i = 0; i < lines.Length; i++)
        {
            string line = lines[i].Trim();
            if (line.StartsWith(PreludeStart, StringComparison.Ordinal))
            {
                // The prelude's code starts after the marker, on the same line or the next ones, and ends at "-->".
                var text = new List<string>();
                int first = i + 1;
                string rest = line[PreludeStart.Length..];
                while (!rest.Contains("-->", StringComparison.Ordinal))
                {
                    text.Add(rest);
                    Assert.True(++i < lines.Length, $"{file}:{first}: a snippet prelude without its closing -->");
                    rest = lines[i];
                }

                text.Add(rest[..rest.IndexOf("-->", StringComparison.Ordinal)]);
                prelude = string.Join('\n', text);
                preludeLine = first;
            }
            else if (line.StartsWith("```csharp", StringComparison.Ordinal))
            {
                int start = i + 1;
                int end = start;
                while (end < lines.Length && lines[end].Trim() != "```")
                {
                    end++;
                }

                Assert.True(end < lines.Length, $"{file}:{i + 1}: a ```csharp block without its closing fence");
                snippets.Add(new Snippet(file, start + 1, Dedent(lines[start..end]), prelude, preludeLine));
                prelude = null;
                i = end;
            }
            else if (line.Length > 0)
            {
                prelude = null;   // a prelude belongs only to the block right after it
            }
        }

        return snippets;
    }

    private static string Dedent(string[] lines)
    {
        int indent = lines.Where(line => line.Trim().Length > 0)
            .Select(line => line.Length - line.TrimStart().Length)
            .DefaultIfEmpty(0)
            .Min();
        return string.Join('\n', lines.Select(line => line.Length >= indent ? line[indent..] : line.TrimStart()));
    }
}
