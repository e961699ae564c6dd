# gpulint_split_words STRING: split STRING into words the way a POSIX shell reads a command
# line, without evaluating anything (no $VAR, no $(…), no globbing, no comments), so that
# `--gpu "RTX 4090"` is the two words `--gpu` and `RTX 4090`:
#   - blanks (space, tab, newline) outside quotes separate words;
#   - '…' is literal; "…" is literal except that \" \\ \$ \` stand for the character and
#     \<newline> is removed; outside quotes \x stands for x and \<newline> is removed.
# Words go to $gpulint_words, each followed by the unit separator (octal 037): split it back
# with IFS set to that character (`IFS=$gpulint_us; set -f; set -- $gpulint_words`), which keeps
# empty words (""). Returns 1 with the reason in $gpulint_split_error on an unterminated quote,
# a trailing backslash, a control character 037, or more than 65536 bytes.
#
# POSIX sh (busybox, dash, bash): sourced by action/entrypoint.sh and copied verbatim into
# ci/gitlab/gpulint.gitlab-ci.yml (the template is included remotely, so it cannot source this
# file); tests/integration/packaging.rs checks that the two copies are the same.
gpulint_split_words() {
  _gsw_s=$1
  _gsw_w=
  _gsw_in=0
  gpulint_words=
  gpulint_split_error=
  gpulint_us=$(printf '\037')
  # Blank characters as variables, not literals: the GitLab template indents this text.
  _gsw_tab=$(printf '\t')
  _gsw_nl=$(printf '\nx')
  _gsw_nl=${_gsw_nl%x}
  if [ ${#_gsw_s} -gt 65536 ]; then
    gpulint_split_error="longer than 65536 characters"
    return 1
  fi
  case $_gsw_s in *"$gpulint_us"*)
    gpulint_split_error="contains the control character 037"
    return 1
    ;;
  esac
  while [ -n "$_gsw_s" ]; do
    _gsw_c=${_gsw_s%"${_gsw_s#?}"}
    _gsw_s=${_gsw_s#?}
    case $_gsw_c in
      ' ' | "$_gsw_tab" | "$_gsw_nl")
        if [ "$_gsw_in" = 1 ]; then
          gpulint_words=$gpulint_words$_gsw_w$gpulint_us
          _gsw_w=
          _gsw_in=0
        fi
        ;;
      "'")
        case $_gsw_s in *"'"*) ;; *)
          gpulint_split_error="unterminated single quote"
          return 1
          ;;
        esac
        _gsw_w=$_gsw_w${_gsw_s%%"'"*}
        _gsw_s=${_gsw_s#*"'"}
        _gsw_in=1
        ;;
      '"')
        _gsw_in=1
        while :; do
          if [ -z "$_gsw_s" ]; then
            gpulint_split_error="unterminated double quote"
            return 1
          fi
          _gsw_c=${_gsw_s%"${_gsw_s#?}"}
          _gsw_s=${_gsw_s#?}
          case $_gsw_c in
            '"') break ;;
            '\')
              _gsw_n=${_gsw_s%"${_gsw_s#?}"}
              case $_gsw_n in
                '$' | '`' | '"' | '\')
                  _gsw_w=$_gsw_w$_gsw_n
                  _gsw_s=${_gsw_s#?}
                  ;;
                "$_gsw_nl")
                  _gsw_s=${_gsw_s#?}
                  ;;
                *) _gsw_w=$_gsw_w$_gsw_c ;;
              esac
              ;;
            *) _gsw_w=$_gsw_w$_gsw_c ;;
          esac
        done
        ;;
      '\')
        if [ -z "$_gsw_s" ]; then
          gpulint_split_error="ends with a backslash"
          return 1
        fi
        _gsw_n=${_gsw_s%"${_gsw_s#?}"}
        _gsw_s=${_gsw_s#?}
        if [ "$_gsw_n" != "$_gsw_nl" ]; then
          _gsw_w=$_gsw_w$_gsw_n
          _gsw_in=1
        fi
        ;;
      *)
        _gsw_w=$_gsw_w$_gsw_c
        _gsw_in=1
        ;;
    esac
  done
  if [ "$_gsw_in" = 1 ]; then
    gpulint_words=$gpulint_words$_gsw_w$gpulint_us
  fi
  return 0
}
