namespace HybridKV.Server.Commands;

/// <summary>Redis's glob patterns (SCAN MATCH): <c>*</c>, <c>?</c>, <c>[abc]</c>, <c>[^a-z]</c> and <c>\</c> escapes.</summary>
internal static class GlobPattern
{
    /// <summary>Whether <paramref name="text"/> matches <paramref name="pattern"/>.</summary>
    public static bool IsMatch(ReadOnlySpan<byte> pattern, ReadOnlySpan<byte> text)
    {
        // Iterative with one backtrack point for the last '*': linear in practice, never exponential.
        int p = 0, t = 0, starP = -1, starT = 0;
        while (t < text.Length)
        {
            if (p < pattern.Length && pattern[p] == (byte)'*')
            {
                starP = p++;
                starT = t;
                continue;
            }

            if (p < pattern.Length && MatchOne(pattern, ref p, text[t]))
            {
                t++;
                continue;
            }

            if (starP < 0)
            {
                return false;
            }

            p = starP + 1;
            t = ++starT;
        }

        while (p < pattern.Length && pattern[p] == (byte)'*')
        {
            p++;
        }

        return p == pattern.Length;
    }

    /// <summary>Matches one character at <paramref name="p"/>, moving past its pattern element when it matches.</summary>
    private static bool MatchOne(ReadOnlySpan<byte> pattern, ref int p, byte c)
    {
        byte element = pattern[p];
        if (element == (byte)'?')
        {
            p++;
            return true;
        }

        if (element == (byte)'\\' && p + 1 < pattern.Length)
        {
            if (pattern[p + 1] != c)
            {
                return false;
            }

            p += 2;
            return true;
        }

        if (element == (byte)'[')
        {
            int i = p + 1;
            bool negate = i < pattern.Length && pattern[i] == (byte)'^';
            if (negate)
            {
                i++;
            }

            bool matched = false;
            while (i < pattern.Length && pattern[i] != (byte)']')
            {
                if (pattern[i] == (byte)'\\' && i + 1 < pattern.Length)
                {
                    matched |= pattern[i + 1] == c;
                    i += 2;
                }
                else if (i + 2 < pattern.Length && pattern[i + 1] == (byte)'-' && pattern[i + 2] != (byte)']')
                {
                    byte low = Math.Min(pattern[i], pattern[i + 2]);
                    byte high = Math.Max(pattern[i], pattern[i + 2]);
                    matched |= c >= low && c <= high;
                    i += 3;
                }
                else
                {
                    matched |= pattern[i] == c;
                    i++;
                }
            }

            if (matched == negate)
            {
                return false;
            }

            p = Math.Min(i + 1, pattern.Length);
            return true;
        }

        if (element != c)
        {
            return false;
        }

        p++;
        return true;
    }
}
