namespace HybridKV.Azure;

/// <summary>How blobs and containers are named in messages: never with a query string (where a SAS token lives) or
/// user information.</summary>
internal static class BlobNames
{
    /// <summary>The URI without its query, fragment and user information.</summary>
    public static string Display(Uri uri)
    {
        if (!uri.IsAbsoluteUri)
        {
            return "(a relative URI)";
        }

        return uri.GetComponents(UriComponents.SchemeAndServer | UriComponents.Path, UriFormat.UriEscaped);
    }

    /// <summary>Checks a blob name prefix: not empty, no leading or trailing slash, no empty path segment, at most
    /// 900 characters (blob names are at most 1024).</summary>
    public static void CheckPrefix(string prefix, string parameter)
    {
        if (string.IsNullOrWhiteSpace(prefix) || prefix.Length > 900 || prefix.StartsWith('/') || prefix.EndsWith('/') ||
            prefix.Contains("//", StringComparison.Ordinal) || prefix.Any(char.IsControl) || prefix.Contains('\\'))
        {
            throw new ArgumentException(
                $"'{prefix}' is not a valid blob name prefix: 1 to 900 characters, no control characters or " +
                "backslashes, no leading, trailing or doubled '/'.", parameter);
        }
    }
}
